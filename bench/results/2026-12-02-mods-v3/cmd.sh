CHECK_ARGS="--quick --filter mods --skip-decode" MMA_SYNC=0 PARITY=0 PASSES=1 BACKWARD=1 ANCHORS=0 FA4=0 N=4096,16384 BENCH_ARGS="--mods causal-mask" bash bench/device.sh checks table
