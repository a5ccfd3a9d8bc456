#!/bin/sh
# Regenerate hlo_pb2.py (and its .pyi stub) from hlo.proto with the protoc bundled in
# grpcio-tools (a dev dependency). Run from anywhere:
#   PYTHON=.venv/bin/python sh src/irprof/correlate/hlo_proto/regenerate.sh
# The proto path is the `src` root so the file registers in protobuf's descriptor pool under a
# name no other package uses (irprof/correlate/hlo_proto/hlo.proto). Generated code is marked
# for the linters (no lint, no strict typing) and then put through `ruff format`, so
# `make lint` stays clean without excluding it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
python=${PYTHON:-python}
"$python" -m grpc_tools.protoc --proto_path="$src" --python_out="$src" --pyi_out="$src" \
  "$src/irprof/correlate/hlo_proto/hlo.proto"
for generated in "$here/hlo_pb2.py" "$here/hlo_pb2.pyi"; do
  { printf '# ruff: noqa\n# mypy: ignore-errors\n'; cat "$generated"; } > "$generated.tmp"
  mv "$generated.tmp" "$generated"
done
"$python" -m ruff format --quiet "$here/hlo_pb2.py" "$here/hlo_pb2.pyi"
