#!/bin/bash
# usage: bash .devshim/batch5.sh <sha>   (repo root on the device; .devtree = git archive of <sha>)
SHA=$1; R=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
cd .devtree
export PYTHONPATH=/tmp/site:$R/.devshim:$PWD GPUBOOK_GIT_COMMIT=$SHA GPUBOOK_GIT_DIRTY=0 PYTHONUNBUFFERED=1
mkdir -p $OUT/rec $OUT/log
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/log/gpu.txt 2>&1
run() { local name=$1; local t=$2; shift 2; local t0=$(date +%s); timeout $t "$@" > $OUT/log/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-t0 )) s" | tee -a $OUT/log/summary.txt; }
run measure_tm 100 python -m widgets.measure --out $OUT/rec --topic training_memory
run tm_fp16 90 python benchmarks/h200/training_memory_fp16.py --out $OUT/rec/training_memory_fp16.json
[ -s $OUT/rec/training_memory.json ] && cp $OUT/rec/training_memory.json widgets/data/h200/training_memory.json
run doctor 40 python -m widgets.doctor
( run unit 330 python -m pytest -q -n 8 -p no:cacheprovider -p no:randomly -rfE --tb=short -m "not build and not browser" tests ) &
run nbval 380 python -m pytest -q -n 6 --dist loadfile -p no:randomly -p no:cacheprovider -rfE --tb=short --durations=20 --nbval-lax --nbval-current-env chapters book/accuracy.ipynb book/teaching/agendas.ipynb
wait
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/log/gpu.txt 2>&1
cd $OUT && tar czf results.tgz rec log && rm -rf rec log
