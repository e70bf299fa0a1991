# Source this on the GPU machine (no pip install there, no network): makes `import ptxls.<room>`
# work from the working tree by linking the room folders under a ptxls/ namespace folder.
# Usage: source scripts/device-env.sh
_root=$(pwd)
_site=/tmp/ptxls-site
rm -rf "$_site" && mkdir -p "$_site/ptxls"
for room in server diagnostics lowering gputest fewshot; do
  ln -s "$_root/$room" "$_site/ptxls/$room"
done
export PYTHONPATH="$_site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
unset _root _site room
