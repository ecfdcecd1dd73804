#!/bin/bash
SHA=$1; R=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
cd .devtree
export PYTHONPATH=/tmp/site:$R/.devshim:$PWD GPUBOOK_GIT_COMMIT=$SHA GPUBOOK_GIT_DIRTY=0 PYTHONUNBUFFERED=1
mkdir -p $OUT/rec $OUT/log
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/log/gpu.txt 2>&1
t0=$(date +%s); timeout 120 python -m widgets.measure --out $OUT/rec --topic training_memory > $OUT/log/measure_tm.log 2>&1; echo "measure_tm rc=$? $(( $(date +%s)-t0 )) s" >> $OUT/log/summary.txt
[ -s $OUT/rec/training_memory.json ] && cp $OUT/rec/training_memory.json widgets/data/h200/training_memory.json
t0=$(date +%s); timeout 240 python -m pytest -q -n 4 --dist loadfile -p no:randomly -p no:cacheprovider -rfE --tb=short --nbval-lax --nbval-current-env chapters/training_memory.ipynb chapters/memory_hierarchy.ipynb chapters/simt.ipynb chapters/serving.ipynb > $OUT/log/nbval4.log 2>&1; echo "nbval4 rc=$? $(( $(date +%s)-t0 )) s" >> $OUT/log/summary.txt
cat $OUT/log/summary.txt; tail -3 $OUT/log/nbval4.log
python3 -c "
import json; d=json.load(open('$OUT/rec/training_memory.json'))['results']['fragmentation']
for k in ('default','expandable'): r=d[k]; print(k, {x:r.get(x) for x in ('pinned_ok','pinned_segments','pinned_reserved_bytes','inactive_split_bytes','pinned_error','alloc_retries')})
"
