#!/usr/bin/env bash
# Renders an HTML file (a `tessel report`) to a PNG with headless Chromium, as a person would
# see it. usage: report_screenshot.sh REPORT.html OUT.png [WIDTH HEIGHT]
# HEIGHT "full" (the default) renders a window of 16000 px and cuts the blank rows below the
# page's end: the whole page in one image (Chromium's CLI screenshots only the window).
# Exit codes: 0 written, 1 failure, 77 Chromium is not installed (tests treat it as a skip).
# Chromium comes from Debian's `chromium` package (scripts/install_deps.sh with TESSEL_WITH_BROWSER=1).
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 4 ]; then
  echo "usage: $0 REPORT.html OUT.png [WIDTH HEIGHT]" >&2
  exit 1
fi
html=$1
png=$2
width=${3:-1280}
height=${4:-full}
full=0
if [ "$height" = full ]; then
  full=1
  height=16000
fi

browser=""
for candidate in "${CHROMIUM:-}" chromium chromium-browser; do
  if [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1; then
    browser=$(command -v "$candidate")
    break
  fi
done
if [ -z "$browser" ]; then
  echo "report_screenshot: chromium is not installed (apt-get install chromium, or TESSEL_WITH_BROWSER=1 scripts/install_deps.sh)" >&2
  exit 77
fi
if [ ! -f "$html" ]; then
  echo "report_screenshot: $html: no such file" >&2
  exit 1
fi
case "$width$height" in
  *[!0-9]*) echo "report_screenshot: WIDTH and HEIGHT must be pixel counts" >&2; exit 1 ;;
esac

abs_html=$(cd "$(dirname "$html")" && pwd)/$(basename "$html")
mkdir -p "$(dirname "$png")"
abs_png=$(cd "$(dirname "$png")" && pwd)/$(basename "$png")
rm -f "$abs_png"

# A private profile: no first-run state, no lock shared with another Chromium, and nothing
# left behind. Root (CI containers) needs --no-sandbox.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
log="$profile/chromium.log"
if ! timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --disable-extensions --disable-background-networking --user-data-dir="$profile/data" \
    --force-device-scale-factor=1 --window-size="$width,$height" --screenshot="$abs_png" \
    "file://$abs_html" >"$log" 2>&1; then
  echo "report_screenshot: chromium failed:" >&2
  tail -5 "$log" >&2
  exit 1
fi
if [ ! -s "$abs_png" ]; then
  echo "report_screenshot: chromium wrote no screenshot:" >&2
  tail -5 "$log" >&2
  exit 1
fi
if [ "$full" = 1 ]; then
  python3 "$(dirname "$0")/png_tool.py" trim "$abs_png"
fi
echo "$png"
