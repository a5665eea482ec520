#include "tuning_db/sql_connection.h"

namespace tessel {

SqlQuery &SqlQuery::bind(int index, const std::optional<double> &value) {
  if (value) return set(index, *value);
  return set(index, std::monostate{});
}

SqlQuery &SqlQuery::set(int index, SqlValue value) {
  if (index < 1) return *this;
  if (parameters_.size() < static_cast<size_t>(index)) parameters_.resize(index);
  parameters_[index - 1] = std::move(value);
  return *this;
}

Result<int64_t> SqlQuery::run() {
  while (true) {
    auto row = next();
    if (!row.ok()) return row.error();
    if (!row.value()) return changes();
  }
}

Result<SqlTransaction> SqlTransaction::begin(SqlConnection &connection) {
  auto begun = connection.begin_write();
  if (!begun.ok()) return begun.error();
  return SqlTransaction(&connection);
}

SqlTransaction::~SqlTransaction() {
  if (connection_) (void)connection_->execute("ROLLBACK", "roll back a transaction");
}

Result<void> SqlTransaction::commit() {
  if (!connection_) return make_error(ErrorKind::Internal, "commit of a transaction that is not open");
  auto committed = connection_->execute("COMMIT", "commit a transaction");
  if (!committed.ok()) return committed.error();  // still open: the destructor rolls back
  connection_ = nullptr;
  return {};
}

}  // namespace tessel
