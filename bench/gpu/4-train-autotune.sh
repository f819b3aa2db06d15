#!/bin/bash
set -u
S=/opt/torch/.venv/lib/python3.12/site-packages
P=$S/jax_plugins/xla_cuda13/xla_cuda_plugin.so
export LD_LIBRARY_PATH=$(ls -d $S/nvidia/*/lib | paste -sd:) GOPJRT_CUDA_CHECKS=0 GOMLX_NO_AUTO_INSTALL=1
B=xla:$P
here=$(cd "$(dirname "$0")" && pwd)
export PNEC_DATA=$here/shared/data
w=/tmp/w; mkdir -p $w; tar -C $w -xJf $here/e2e.tar.xz; e2e=$w/e2e
loader=$(ls $e2e/lib/ld-linux-x86-64.so.* | head -1)
PN="env GDAL_DATA=$e2e/gdal-data PROJ_DATA=$e2e/proj-data $loader --library-path $e2e/lib:$LD_LIBRARY_PATH $e2e/pnec"
cd $w
$PN synth --layout procedural:610x340 --bands 103 --seed 3 --out pavia.tif --labels-out pavia_gt.tif
run() { # name backend xla_flags encoder
  echo "== train 200 epochs $4, $1"
  XLA_FLAGS="--xla_gpu_cuda_data_dir=$S/nvidia/cuda_nvcc $3" timeout 100 $PN train --scene pavia.tif --labels pavia_gt.tif --out m.pnec --encoder $4 --epochs 200 --backend $2 2>&1 | grep -E 'epoch (10|20|200)/|epochs in'
}
run "notf32, autotune 0" $B "--xla_gpu_autotune_level=0" paper
run "notf32, autotune 0" $B "--xla_gpu_autotune_level=0" cell
run "tf32" $B,tf32 "" paper
run "tf32, autotune 0" $B,tf32 "--xla_gpu_autotune_level=0" paper
