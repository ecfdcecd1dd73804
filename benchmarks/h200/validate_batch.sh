#!/usr/bin/env bash
# The H200 batch, part 2: with the new records in widgets/data/h200, run nbval on every chapter
# and the accuracy page, the unit tests, and the doctor. Writes $OUT/validation.txt.
#
#   bash benchmarks/h200/validate_batch.sh <git commit>
#
# The H200 image has no Sphinx stack: .devshim/myst_nb provides glue() (it only records values
# for the book build; under nbval it displays them), the rest comes as wheels in .whl.
set -uo pipefail
COMMIT="${1:?usage: validate_batch.sh <git commit>}"
OUT="${OUT:?set OUT}"
export GPUBOOK_GIT_COMMIT="$COMMIT" PYTHONUNBUFFERED=1
{
  echo "# nbval and unit tests on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(date -u +%F), commit $COMMIT"
  echo "# command: python3 -m pytest -q -n 4 --dist loadfile -p no:randomly --nbval-lax --nbval-current-env chapters book/accuracy.ipynb"
  python3 -m pytest -q -n 4 --dist loadfile -p no:randomly -p no:cacheprovider --nbval-lax --nbval-current-env chapters book/accuracy.ipynb 2>&1 | tail -25
  echo "# command: python3 -m pytest -q -n 8 tests --ignore=tests/test_book.py --ignore=tests/test_browser.py"
  python3 -m pytest -q -n 8 -p no:cacheprovider tests --ignore=tests/test_book.py --ignore=tests/test_browser.py 2>&1 | tail -25
  echo "# python -m widgets.doctor"
  python3 -m widgets.doctor 2>&1 | tail -30
} 2>&1 | tee "$OUT/validation.txt"
