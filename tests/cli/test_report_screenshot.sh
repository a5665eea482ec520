#!/usr/bin/env bash
# `tessel report` end to end: tune the bundled tiny model briefly, write the report, render it
# with headless Chromium (scripts/report_screenshot.sh) and check the PNG is a real picture:
# PNG signature, the requested size in IHDR, many colours, and much bigger than a blank page
# rendered the same way. Exit 77 (skipped) when Chromium is not installed.
# usage: test_report_screenshot.sh PATH/TO/tessel SOURCE_DIR
set -u
tessel=$1
src=$2
model=$src/examples/models/tiny_cnn.onnx
screenshot=$src/scripts/report_screenshot.sh
width=1280
height=1600

if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 && [ -z "${CHROMIUM:-}" ]; then
  echo "skipped: chromium is not installed (TESSEL_WITH_BROWSER=1 scripts/install_deps.sh)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "FAILED: $*"
  exit 1
}

"$tessel" tune "$model" --trials 8 --batch 4 --min-repeat-ms 5 --db "$tmp/tune.db" >"$tmp/tune.log" 2>&1 ||
  { tail -5 "$tmp/tune.log"; fail "tessel tune"; }
"$tessel" report --db "$tmp/tune.db" --model "$model" -o "$tmp/report.html" >"$tmp/report.log" 2>&1 ||
  { cat "$tmp/report.log"; fail "tessel report"; }
grep -q "wrote $tmp/report.html" "$tmp/report.log" || fail "tessel report did not say what it wrote"
for needle in "id='curves'" "id='split'" "id='costmodel'" "id='tasks'" "<svg"; do
  grep -qF "$needle" "$tmp/report.html" || fail "report.html lacks $needle"
done
if grep -qE 'https?://|<script|<link' "$tmp/report.html"; then
  fail "report.html is not self-contained: $(grep -oE 'https?://[^ ]*|<script[^>]*>|<link[^>]*>' "$tmp/report.html" | head -1)"
fi

"$screenshot" "$tmp/report.html" "$tmp/report.png" "$width" "$height" >"$tmp/shot.log" 2>&1
code=$?
[ "$code" = 77 ] && { cat "$tmp/shot.log"; exit 77; }
[ "$code" = 0 ] || { cat "$tmp/shot.log"; fail "report_screenshot.sh exited $code"; }
printf '<!DOCTYPE html><html><body></body></html>' >"$tmp/blank.html"
"$screenshot" "$tmp/blank.html" "$tmp/blank.png" "$width" "$height" >>"$tmp/shot.log" 2>&1 ||
  { cat "$tmp/shot.log"; fail "blank page screenshot"; }

python3 - "$tmp/report.png" "$tmp/blank.png" "$width" "$height" <<'PY' || fail "the screenshot is not a rendered report"
import struct, sys
report, blank, width, height = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = open(report, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
assert data[12:16] == b"IHDR", "no IHDR chunk first"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (width, height), f"PNG is {w}x{h}, want {width}x{height}"
blank_size = len(open(blank, "rb").read())
# A blank page compresses to a few KB; text, charts and tables make it many times larger.
assert len(data) > 8 * blank_size and len(data) > 40000, f"PNG has {len(data)} bytes, a blank page {blank_size}"
print(f"ok: {w}x{h} PNG, {len(data)} bytes (blank page: {blank_size})")
PY
read -r w h colours content < <(python3 "$src/scripts/png_tool.py" info "$tmp/report.png") || fail "png_tool.py info"
[ "$colours" -ge 20 ] || fail "the screenshot has only $colours colours"
[ "$content" -ge 800 ] || fail "the page content ends at row $content of $h"
echo "ok: $colours colours, content down to row $content"
