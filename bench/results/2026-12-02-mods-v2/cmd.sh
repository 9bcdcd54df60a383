PASSES=1 BACKWARD=1 ANCHORS=0 FA4=0 N=4096,16384 BENCH_ARGS="--mods alibi,causal-mask" bash bench/device.sh table
