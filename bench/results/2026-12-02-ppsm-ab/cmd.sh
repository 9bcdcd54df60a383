# device call 1 of 2026-12-02 (fourth session), build cca7b2d (flashgen.xz, build.txt carried):
OUT=$OUT/var ROUNDS=2 VARIANTS="p34:--bwd-configs w:64,64,4,2@programs_per_sm=3|64,64,4,2@programs_per_sm=4" BACKWARD=1 D=64 BENCH_TIMEOUT=170 bash bench/device.sh variants
