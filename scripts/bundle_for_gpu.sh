#!/usr/bin/env bash
# Packages the built `tessel` CLI for a GPU machine that has CUDA, a driver and a compiler but
# none of Debian's packages (no Halide, LLVM, XGBoost, SQLite, ONNX, OpenBLAS, oneDNN ...):
#
#   scripts/bundle_for_gpu.sh [--with-tests] [--slim] [--no-strip] [--no-stubs] BUILD_DIR OUT.tar.xz
#   scripts/bundle_for_gpu.sh --check OUT.tar.xz [MODEL.onnx]
#
# The archive holds tessel-bundle/{tessel, bin/, lib/, libexec/, BUNDLE.txt}: the binaries, every
# shared library `ldd` says they need and Halide's autoscheduler plugins (lib/halide14/, which
# tessel dlopens), and a wrapper `tessel-bundle/tessel` that puts lib/ first on the library path.
# Left to the host: glibc (its libraries must match the host's ld.so) and the NVIDIA driver
# (libcuda.so.1, dlopened at run time; libnvidia-*). libstdc++/libgcc_s/libgomp are bundled:
# the binaries and Debian's libraries need GLIBCXX_3.4.30 (GCC 12), newer than many hosts have,
# and nothing else in tessel's process (libcuda.so.1 links only glibc) brings another copy.
#
# Two libraries are replaced by stubs unless --no-stubs (about 14 MiB of a ~59 MiB xz
# archive): libz3 (LLVM's SMT backend for clang's static analyzer) and libicudata (ICU's data,
# reached only through libxml2 <- LLVM's Windows-manifest merger). tessel never calls either;
# a stub defines exactly the symbols the bundle imports from the library, and each of its
# functions prints its name and aborts. `--check` runs `ldd -r`, which proves the stubs are
# complete (every relocation resolves). --slim also stubs oneDNN and OpenBLAS (about 11 MB
# less), which only `tessel bench --vs onednn,openblas` calls: bench there needs
# `--vs default,adams2019`.
#
# `tessel compile` links kernels.so with the host's `c++` (TESSEL_LINKER): the wrapper points
# TESSEL_LINKER at libexec/host-c++, which runs the host compiler with the host's own library
# path rather than the bundle's. `--target cuda` also runs the host's ptxas.
#
# --check extracts the archive to a temporary directory, runs `ldd -r` on every bundled binary
# and library with the bundle's library path, fails on any library resolved outside the bundle
# that is not glibc or the driver (and on anything not found, a missing GLIBC_x.y version or an
# undefined symbol), then runs `tessel --help` and `tessel inspect` on a model (default:
# build/models/resnet18.onnx if built, else examples/models/tiny_cnn.onnx).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
plugin_dir=${HALIDE_PLUGIN_DIR:-/usr/lib/x86_64-linux-gnu/halide14}
xz_threads=${XZ_THREADS:-2}
xz_preset=${XZ_PRESET:-9e}  # 6: about three times faster, a few MiB larger
# Libraries every Linux machine with an NVIDIA driver has, which must come from the host.
host_lib_re='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libutil\.so\.1|libresolv\.so\.2|libcuda\.so(\..*)?|libnvidia-.*)$'
# Libraries replaced by abort-on-call stubs (see above).
stub_lib_re='^(libz3\.so\..*|libicudata\.so\..*)$'

die() { echo "bundle_for_gpu: $*" >&2; exit 1; }
usage() { sed -n '5,6p' "$0" | sed 's/^# *//' >&2; exit 2; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# ldd's "NAME => PATH (ADDR)" and "PATH (ADDR)" lines as "NAME PATH" ("NAME -" when not found).
ldd_pairs() {
  ldd "$1" | awk '
    $2 == "=>" && $3 == "not" { print $1, "-"; next }
    $2 == "=>" { print $1, $3; next }
    $1 ~ /^\// || $1 ~ /^linux-vdso/ { n = $1; sub(/.*\//, "", n); print n, $1 }'
}

# A shared library with LIB's soname that defines exactly the symbols the other ELF files
# under DIR import from LIB (and that neither they nor the HOST_LIBS define, so that a stub
# never interposes anything): functions that abort, data objects of zeros.
make_stub() {
  local lib=$1 dir=$2 out=$3 work soname f name type size
  shift 3
  work=$(mktemp -d)
  soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ -n "$soname" ] || soname=$(basename "$out")
  if readelf --version-info "$lib" | grep -q 'Version definition'; then
    rm -rf "$work"; die "$lib has versioned symbols; stubbing it is not supported (use --no-stubs)"
  fi
  nm -D --defined-only -S "$lib" | awk 'NF == 4 { print $4, $3, $2 } NF == 3 { print $3, $2, 0 }' |
    LC_ALL=C sort -u -k1,1 > "$work/defined"                              # name type size
  while IFS= read -r -d '' f; do nm -D --undefined-only "$f" 2>/dev/null || true; done \
    < <(find "$dir" -type f ! -name "$(basename "$out")" -print0) |
    awk '{ sub(/@.*/, "", $NF); print $NF }' | LC_ALL=C sort -u > "$work/imported"
  { while IFS= read -r -d '' f; do nm -D --defined-only "$f" 2>/dev/null || true; done \
      < <(find "$dir" -type f ! -name "$(basename "$out")" -print0)
    for f in "$@"; do nm -D --defined-only "$f" 2>/dev/null || true; done
  } | awk '{ sub(/@.*/, "", $NF); print $NF }' | LC_ALL=C sort -u > "$work/elsewhere"
  LC_ALL=C comm -23 "$work/imported" "$work/elsewhere" > "$work/wanted"
  LC_ALL=C join "$work/defined" "$work/wanted" > "$work/stubbed" || true
  {
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    echo 'static void tessel_stub_abort(const char *symbol) {'
    echo "  fprintf(stderr, \"tessel bundle: %s called, but $soname is a stub in this bundle\""
    echo "          \" (bundle_for_gpu.sh without --slim, or with --no-stubs, bundles the real one)\\n\", symbol);"
    echo '  abort();'
    echo '}'
    while read -r name type size; do
      case $type in
        [TtWiI]) echo "void $name(void) { tessel_stub_abort(\"$name\"); }" ;;
        *) echo "__attribute__((aligned(16))) unsigned char ${name}[$(( 16#$size > 0 ? 16#$size : 16 ))];" ;;
      esac
    done < "$work/stubbed"
  } > "$work/stub.c"
  cc -shared -fPIC -O1 -Wl,-soname,"$soname" -o "$out" "$work/stub.c"
  echo "  stub $soname: $(wc -l < "$work/stubbed") symbols, $(mib "$(stat -c %s "$out")") (the real one: $(mib "$(stat -Lc %s "$lib")"))"
  rm -rf "$work"
}

# The unit test binaries (tests/CMakeLists.txt, one per module) that --with-tests packs.
unit_tests=(tessel_base_tests tessel_tensor_tests tessel_graph_tests tessel_compute_tests tessel_schedule_tests
            tessel_executor_tests tessel_deploy_tests tessel_compiler_tests tessel_tuner_tests tessel_tuning_db_tests
            tessel_tools_tests)

write_wrapper() {  # tessel-bundle/NAME runs bin/NAME with the bundle's libraries first
  cat > "$1/$2" <<EOF
#!/bin/sh
# $2 from this bundle: its own libraries first, then the host's library path (the NVIDIA
# driver's libcuda.so.1 is found there or in the system directories), glibc from the host.
here=\$(cd "\$(dirname "\$0")" && pwd -P)
if [ -z "\${TESSEL_BUNDLE_HOST_LD_LIBRARY_PATH+set}" ]; then
  export TESSEL_BUNDLE_HOST_LD_LIBRARY_PATH="\${LD_LIBRARY_PATH-}"
fi
export LD_LIBRARY_PATH="\$here/lib\${TESSEL_BUNDLE_HOST_LD_LIBRARY_PATH:+:\$TESSEL_BUNDLE_HOST_LD_LIBRARY_PATH}"
export TESSEL_LINKER="\${TESSEL_LINKER:-\$here/libexec/host-c++}"
exec "\$here/bin/$2" "\$@"
EOF
  chmod +x "$1/$2"
}

bundle() {
  local with_tests=0 strip=1 stubs=1
  while [ $# -gt 0 ]; do
    case $1 in
      --with-tests) with_tests=1 ;;
      --no-strip) strip=0 ;;
      --no-stubs) stubs=0 ;;
      --slim) stub_lib_re=${stub_lib_re%)\$}'|libdnnl\.so\..*|libopenblas\.so\..*)$' ;;
      -h|--help) usage ;;
      -*) die "unknown option $1" ;;
      *) break ;;
    esac
    shift
  done
  [ $# -eq 2 ] || usage
  local build=$1 out=$2
  [ -x "$build/bin/tessel" ] || die "$build/bin/tessel not found (build it first)"
  case $out in *.tar.xz|*.txz|*.tar.gz|*.tgz) ;; *) die "OUT must end in .tar.xz or .tar.gz" ;; esac
  out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

  local stage
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  stage=$tmp/tessel-bundle
  mkdir -p "$stage/bin" "$stage/lib/halide14" "$stage/libexec"

  cp "$build/bin/tessel" "$stage/bin/"
  if [ $with_tests = 1 ]; then
    for t in "${unit_tests[@]}"; do
      [ -x "$build/tests/$t" ] || die "--with-tests: $build/tests/$t not built"
      cp "$build/tests/$t" "$stage/bin/"
    done
  fi
  # Halide::load_plugin dlopens these (tessel bench --vs adams2019); ldd cannot see them.
  if compgen -G "$plugin_dir/libautoschedule_*.so" >/dev/null; then
    cp "$plugin_dir"/libautoschedule_*.so "$stage/lib/halide14/"
  else
    echo "warning: no Halide autoscheduler plugins in $plugin_dir (bench --vs adams2019 will fail)" >&2
  fi

  echo "collecting libraries:"
  local f name path missing=0
  declare -A where=() host=() stubbed=() seen=()
  for f in "$stage"/bin/* "$stage"/lib/halide14/*.so; do      # where each needed library is here
    [ -e "$f" ] || continue
    while read -r name path; do
      if [[ $name =~ $host_lib_re ]]; then host[$name]=$path; continue; fi
      if [ "$path" = - ]; then echo "  not found: $name (needed by $(basename "$f"))" >&2; missing=1; fi
      where[$name]=$path
    done < <(ldd_pairs "$f")
  done
  [ $missing = 0 ] || die "libraries not found on this machine"
  # The closure over DT_NEEDED, not descending into stubbed libraries (with --slim, OpenBLAS's
  # libgfortran and libquadmath stay behind).
  local queue=("$stage"/bin/* "$stage"/lib/halide14/*.so)
  while [ ${#queue[@]} -gt 0 ]; do
    f=${queue[0]}; queue=("${queue[@]:1}")
    [ -e "$f" ] || continue
    for name in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      [[ $name =~ $host_lib_re ]] && continue
      [ -z "${seen[$name]+x}" ] || continue
      seen[$name]=1
      path=${where[$name]:-}
      [ -n "$path" ] || die "$name (needed by $(basename "$f")) is not in ldd's list"
      if [ $stubs = 1 ] && [[ $name =~ $stub_lib_re ]]; then stubbed[$name]=$path; continue; fi
      cp -L "$path" "$stage/lib/$name"
      queue+=("$stage/lib/$name")
    done
  done
  local copied=("$stage"/lib/*.so*)
  echo "  copied ${#copied[@]} libraries; left to the host: ${!host[*]}"
  local host_paths=()
  for name in "${!host[@]}"; do [ -f "${host[$name]}" ] && host_paths+=("${host[$name]}"); done
  for name in "${!stubbed[@]}"; do
    make_stub "${stubbed[$name]}" "$stage" "$stage/lib/$name" "${host_paths[@]}"
  done

  chmod -R u+w "$stage"
  if [ $strip = 1 ]; then
    find "$stage/bin" "$stage/lib" -type f -exec strip --strip-unneeded {} +
  fi

  write_wrapper "$stage" tessel
  if [ $with_tests = 1 ]; then
    for t in "${unit_tests[@]}"; do write_wrapper "$stage" "$t"; done
  fi
  cat > "$stage/libexec/host-c++" <<'EOF'
#!/bin/sh
# The linker `tessel compile` runs (TESSEL_LINKER): the host's C++ compiler with the host's own
# library path, not the bundle's. TESSEL_BUNDLE_CXX names another compiler.
if [ -n "${TESSEL_BUNDLE_HOST_LD_LIBRARY_PATH-}" ]; then
  export LD_LIBRARY_PATH="$TESSEL_BUNDLE_HOST_LD_LIBRARY_PATH"
else
  unset LD_LIBRARY_PATH
fi
exec "${TESSEL_BUNDLE_CXX:-c++}" "$@"
EOF
  chmod +x "$stage/libexec/host-c++"

  local glibc
  glibc=$(find "$stage/bin" "$stage/lib" -type f -exec objdump -T {} + 2>/dev/null |
          grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -1)
  {
    echo "tessel bundle for GPU machines without Debian's packages (scripts/bundle_for_gpu.sh)"
    echo "commit: $(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
    echo "needs from the host: glibc >= ${glibc#GLIBC_} ($(ldd --version | head -1 | awk '{ print $NF }') here), the NVIDIA driver for --target cuda,"
    echo "  a C++ compiler as c++ for tessel compile (or TESSEL_BUNDLE_CXX), ptxas for --target cuda"
    echo "stubs: ${!stubbed[*]}"
    echo "Halide autoscheduler plugins: lib/halide14/ (tessel looks for them in $plugin_dir)"
  } > "$stage/BUNDLE.txt"

  local raw packed start
  raw=$(du -sb "$stage" | cut -f1)
  start=$(date +%s)
  case $out in
    *.tar.xz|*.txz) tar -C "$tmp" -cf - tessel-bundle | xz --x86 --lzma2=preset="$xz_preset" -T"$xz_threads" > "$out.part" ;;
    *) tar -C "$tmp" -cf - tessel-bundle | gzip -9 > "$out.part" ;;
  esac
  mv "$out.part" "$out"
  packed=$(stat -c %s "$out")
  echo "uncompressed: $(mib "$raw") ($raw bytes)"
  echo "compressed:   $(mib "$packed") ($packed bytes) in $(( $(date +%s) - start )) s -> $out"
  echo "needs glibc >= ${glibc#GLIBC_} on the GPU machine"
}

check() {
  [ $# -ge 1 ] && [ $# -le 2 ] || usage
  local archive=$1 model=${2:-}
  [ -f "$archive" ] || die "$archive not found"
  if [ -z "$model" ]; then
    for model in "$repo/build/models/resnet18.onnx" "$repo/examples/models/tiny_cnn.onnx" ""; do
      [ -z "$model" ] || [ -f "$model" ] && break
    done
  fi
  local b
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  tar -C "$tmp" -xf "$archive"
  b=$tmp/tessel-bundle
  [ -x "$b/tessel" ] && [ -x "$b/bin/tessel" ] || die "$archive holds no tessel-bundle/tessel"
  cat "$b/BUNDLE.txt"
  echo "host: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), glibc $(ldd --version | head -1 | awk '{ print $NF }')"
  # Informational: what --target cuda and tessel compile take from the host.
  local driver=none d
  for d in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }} $(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{ sub(/\/[^\/]*$/, "", $NF); print $NF }'); do
    [ -e "$d/libcuda.so.1" ] && { driver=$d/libcuda.so.1; break; }
  done
  echo "host: NVIDIA driver $driver; c++ $(command -v "${TESSEL_BUNDLE_CXX:-c++}" || echo none);" \
       "ptxas $(command -v ptxas || { [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" ] && echo "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas"; } || echo none)"

  local f line name path bad=0 inside outside
  declare -A from_host=()
  for f in "$b"/bin/* "$b"/lib/*.so* "$b"/lib/halide14/*.so; do
    [ -e "$f" ] || continue
    inside=0 outside=0
    while IFS= read -r line; do
      case $line in
        *"not found"*|*"undefined symbol"*|*"not a dynamic executable"*)
          echo "FAIL ${f#$b/}: ${line#"${line%%[![:space:]]*}"}"; bad=1; continue ;;
      esac
      if [[ $line =~ ^[[:space:]]*([^[:space:]]+)[[:space:]]=\>[[:space:]]([^[:space:]]+) ]]; then
        name=${BASH_REMATCH[1]} path=${BASH_REMATCH[2]}
      elif [[ $line =~ ^[[:space:]]*([^[:space:]]+)[[:space:]]\( ]]; then
        path=${BASH_REMATCH[1]} name=${path##*/}
      else
        continue
      fi
      if [[ $name != linux-vdso* ]] && [[ $(readlink -f "$path") == "$b"/* ]]; then
        inside=$((inside + 1))
      elif [[ $name =~ $host_lib_re ]]; then
        outside=$((outside + 1)); from_host[$name]=$path
      else
        echo "FAIL ${f#$b/}: $name resolves outside the bundle: $path"; bad=1
      fi
    done < <(LD_LIBRARY_PATH="$b/lib" ldd -r "$f" 2>&1)
    case $f in */bin/*) echo "ldd -r ${f#$b/}: $inside libraries from the bundle, $outside from the host" ;; esac
  done
  echo "ldd -r on $(ls "$b"/lib/*.so* "$b"/lib/halide14/*.so 2>/dev/null | wc -l) bundled libraries done"
  local k; for k in "${!from_host[@]}"; do echo "  host: $k => ${from_host[$k]}"; done | sort
  [ $bad = 0 ] || die "check failed: libraries outside the bundle or unresolved (see FAIL lines)"

  echo "\$ tessel --help"
  "$b/tessel" --help > "$tmp/help"
  head -5 "$tmp/help"
  if [ -n "$model" ]; then
    echo "\$ tessel inspect $model"
    "$b/tessel" inspect "$model"
  else
    echo "(no model found for tessel inspect)"
  fi
  echo "check passed"
}

case ${1:-} in
  --check) shift; check "$@" ;;
  ""|-h|--help) usage ;;
  *) bundle "$@" ;;
esac
