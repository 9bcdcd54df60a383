"""Where a kernel's warps wait, per SASS line, from `bench/device.sh ncu`'s <name>.sass.csv.xz (Nsight Compute's
source page): the lines holding the most stall samples, each with its top three reasons, and with
FROM TO a window of lines in order.

usage: python3 bench/ncu_stalls.py FILE.sass.csv[.xz] [TOP | FROM TO]
"""
import csv, io, lzma, sys

path = sys.argv[1]
text = lzma.open(path, "rt").read() if path.endswith(".xz") else open(path).read()
rows = list(csv.reader(io.StringIO(text)))
hdr, data = rows[1], rows[2:]
src, samples = hdr.index("Source"), hdr.index("Warp Stall Sampling (All Samples)")
reasons = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
count = lambda r: int(r[samples] or 0)
total = sum(count(r) for r in data)

def show(k):
    r = data[k]
    top = sorted(((int(r[i] or 0), hdr[i][6:]) for i in reasons), reverse=True)[:3]
    why = ", ".join(f"{n} {v / total * 100:.1f}%" for v, n in top if v) if count(r) > total * 0.002 else ""
    print(f"{k:5d} {count(r) / total * 100:5.1f}%  {r[src].strip()[:70]:70s} {why}")

print(f"{rows[0][1]}: {total} samples")
if len(sys.argv) == 4:
    for k in range(int(sys.argv[2]), int(sys.argv[3])):
        show(k)
else:
    for k in sorted(sorted(range(len(data)), key=lambda k: -count(data[k]))[: int(sys.argv[2]) if len(sys.argv) > 2 else 30]):
        show(k)
