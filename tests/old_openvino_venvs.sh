#!/usr/bin/env bash
# Make one virtualenv per older OpenVINO release for tests/ops/test_target_openvino_releases.py and
# print their Pythons as OVPOOL_OLD_OPENVINO wants them (joined by ':'):
#
#   export OVPOOL_OLD_OPENVINO=$(bash tests/old_openvino_venvs.sh /tmp/old-openvino)
#
# Each holds only openvino==RELEASE and numpy<2 from PyPI (~30 s each on 2 cores, run side by side;
# ~40 MB each). A virtualenv that already has its release is kept. A release whose install fails
# is left out with a note on stderr; none at all prints nothing (the tests are then skipped).
set -uo pipefail
folder=${1:?usage: old_openvino_venvs.sh FOLDER [RELEASE...]}
shift
releases=("$@")
[ ${#releases[@]} -gt 0 ] || releases=(2023.3.0 2024.6.0)
mkdir -p "$folder"
for release in "${releases[@]}"; do
  (
    venv="$folder/ov$release"
    if ! "$venv/bin/python" -c "import openvino" 2>/dev/null; then
      python3 -m venv "$venv" &&
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "openvino==$release" "numpy<2" >&2 ||
        echo "note: openvino $release could not be installed; it is not tested" >&2
    fi
  ) &
done
wait
pythons=()
for release in "${releases[@]}"; do
  python="$folder/ov$release/bin/python"
  "$python" -c "import openvino" 2>/dev/null && pythons+=("$python")
done
(IFS=:; echo "${pythons[*]}")
