#!/bin/bash
SHA=$1; R=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
cd .devtree
export PYTHONPATH=/tmp/site:$R/.devshim:$PWD GPUBOOK_GIT_COMMIT=$SHA GPUBOOK_GIT_DIRTY=0 PYTHONUNBUFFERED=1
mkdir -p $OUT/rec $OUT/log
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/log/gpu.txt 2>&1
t0=$(date +%s); timeout 200 python -m widgets.measure --out $OUT/rec --topic kernels > $OUT/log/measure_kernels.log 2>&1; echo "measure_kernels rc=$? $(( $(date +%s)-t0 )) s" >> $OUT/log/summary.txt
[ -s $OUT/rec/kernels.json ] && cp $OUT/rec/kernels.json widgets/data/h200/kernels.json
t0=$(date +%s); timeout 150 python -m pytest -q -p no:randomly -p no:cacheprovider -rfE --tb=short --nbval-lax --nbval-current-env chapters/kernels.ipynb > $OUT/log/nbval_kernels.log 2>&1; echo "nbval_kernels rc=$? $(( $(date +%s)-t0 )) s" >> $OUT/log/summary.txt
cat $OUT/log/summary.txt; tail -3 $OUT/log/nbval_kernels.log
