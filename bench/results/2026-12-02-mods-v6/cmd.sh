CHECK_ARGS="--quick --filter mods --skip-decode" MMA_SYNC=0 PARITY=0 PASSES=1 BACKWARD=1 ANCHORS=0 FA4=0 D=128 N=4096 BENCH_ARGS="--mods alibi,causal-mask" bash bench/device.sh checks table
