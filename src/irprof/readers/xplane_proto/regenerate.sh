#!/bin/sh
# Regenerate xplane_pb2.py, xplane_view_pb2.py and profile_options_pb2.py (with .pyi stubs) from
# the .proto files with the protoc bundled in grpcio-tools (a dev dependency). Run from anywhere:
#   PYTHON=.venv/bin/python sh src/irprof/readers/xplane_proto/regenerate.sh
# The proto path is the `src` root so the file registers in protobuf's descriptor pool under a
# name no other package uses (irprof/readers/xplane_proto/xplane.proto).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
python=${PYTHON:-python}
"$python" -m grpc_tools.protoc --proto_path="$src" --python_out="$src" --pyi_out="$src" \
  "$src/irprof/readers/xplane_proto/xplane.proto" \
  "$src/irprof/readers/xplane_proto/xplane_view.proto" \
  "$src/irprof/readers/xplane_proto/profile_options.proto"
# The stubs are generated code: exempt them from the project's strict lint and type rules, and
# format them so `ruff format --check` stays clean.
for stub in "$here"/*_pb2.pyi; do
  printf '# ruff: noqa\n# mypy: ignore-errors\n%s\n' "$(cat "$stub")" > "$stub"
done
RUFF=${RUFF:-$(dirname "$python")/ruff}
if [ -x "$RUFF" ]; then "$RUFF" format --quiet "$here"/*_pb2.pyi; fi
