#!/bin/bash
# call 3: end to end on the GPU with the e2e bundle
set -u
S=/opt/torch/.venv/lib/python3.12/site-packages
P=$S/jax_plugins/xla_cuda13/xla_cuda_plugin.so
export LD_LIBRARY_PATH=$(ls -d $S/nvidia/*/lib | paste -sd:) XLA_FLAGS="--xla_gpu_cuda_data_dir=$S/nvidia/cuda_nvcc" GOPJRT_CUDA_CHECKS=0 GOMLX_NO_AUTO_INSTALL=1
B=xla:$P
here=$(cd "$(dirname "$0")" && pwd)
export PNEC_DATA=$here/shared/data
w=/tmp/w; mkdir -p $w; tar -C $w -xJf $here/e2e.tar.xz; e2e=$w/e2e
loader=$(ls $e2e/lib/ld-linux-x86-64.so.* | head -1)
pnec() { GDAL_DATA=$e2e/gdal-data PROJ_DATA=$e2e/proj-data "$loader" --library-path "$e2e/lib:$LD_LIBRARY_PATH" "$e2e/pnec" "$@"; }
rss() { python3 -c 'import resource,subprocess,sys,time; t=time.time(); r=subprocess.run(sys.argv[1:]); print("wall %.2f s, peak RSS %.0f MiB, exit %d" % (time.time()-t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024, r.returncode))' "$@"; }
export -f pnec
PN="env GDAL_DATA=$e2e/gdal-data PROJ_DATA=$e2e/proj-data $loader --library-path $e2e/lib:$LD_LIBRARY_PATH $e2e/pnec"
cd $w
echo "== synth"
pnec synth --layout procedural:610x340 --bands 103 --seed 3 --out pavia.tif --labels-out pavia_gt.tif
pnec synth --layout procedural:256x256 --bands 103 --seed 3 --out s.tif --labels-out s_gt.tif
for enc in paper cell; do
  echo "== train 200 epochs $enc, 610x340x103, $B (notf32 default)"
  timeout 150 $PN train --scene pavia.tif --labels pavia_gt.tif --out m_$enc.pnec --encoder $enc --epochs 200 --backend $B 2>&1 | tail -8
done
echo "== whole vs tiled"
$PN train --quiet --scene s.tif --labels s_gt.tif --out m.pnec --epochs 30 --backend $B
$PN classify --quiet --model m.pnec --backend $B --tile 0 s.tif whole.tif && $PN classify --quiet --model m.pnec --backend $B --tile 128 --overlap 32 s.tif tiled.tif && python3 $here/../scripts/compare_class.py whole.tif tiled.tif
echo "== big"
pnec synth --layout procedural:1024x1024 --bands 200 --seed 5 --out big.vrt --vrt 10000x10000
pnec synth --layout procedural:256x256 --bands 200 --seed 6 --out t200.tif --labels-out t200_gt.tif
$PN train --quiet --scene t200.tif --labels t200_gt.tif --out m200.pnec --epochs 30 --backend $B
for mm in 32G; do
echo "== classify 10000x10000x200 --max-memory $mm"
timeout 300 python3 -c 'import resource,subprocess,sys,time; t=time.time(); r=subprocess.run(sys.argv[1:]); print("wall %.2f s, peak RSS %.0f MiB, exit %d" % (time.time()-t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024, r.returncode))' $PN --config GDAL_NUM_THREADS=ALL_CPUS classify --model m200.pnec --backend $B --max-memory $mm big.vrt big_map.tif 2>&1 | tail -30
done
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv
