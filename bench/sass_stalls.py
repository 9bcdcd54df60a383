#!/usr/bin/env python3
"""The stall cycles ptxas encodes in each SASS instruction's control bits (the fixed-latency waits it
schedules: e.g. 8 cycles between two MUFU.EX2 of one warp, the SFU's throughput), read from
`nvdisasm -c -hex` output. A static view of where a warp idles by ptxas's own model, beside Nsight's
measured stall samples (bench/ncu_stalls.py).

    python3 bench/sass_stalls.py FILE.sass                 # every loop (a backward branch): stall sum, count
    python3 bench/sass_stalls.py FILE.sass FROM TO [PATH]  # instructions FROM..TO (their index), one a line
      PATH: comma-separated index ranges (e.g. 1006-1062,1201-1473,1636-1715) to sum one path through them
    python3 bench/sass_stalls.py FILE.sass --unmasked FROM TO  # a ping-pong K/V step's unmasked path: from
      FROM (the loop's first instruction), the predicated branch right after the wait for S taken (past the
      mask), other predicated branches not, unconditional ones followed, up to TO or a backward branch
"""
import re
import sys
from collections import Counter


def instructions(path):
    """(index, text, control bits) of each instruction; labels map to the next index."""
    lines = open(path).read().splitlines()
    out, labels, i = [], {}, 0
    while i < len(lines):
        lab = re.match(r"^\s*(\.L_x_\d+):", lines[i])
        if lab:
            labels[lab.group(1)] = len(out)
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?);\s*/\* (0x[0-9a-f]+) \*/", lines[i])
        if m and i + 1 < len(lines):
            hi = re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1])
            if hi:
                out.append((len(out), m.group(1).strip(), int(hi.group(1), 16) >> 41))
                i += 2
                continue
        i += 1
    if not out:
        sys.exit(f"{path}: no instructions with control words (disassemble with `nvdisasm -c -hex`)")
    return out, labels


def opcode(text):
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]


def stall(ctl):
    return ctl & 0xF


def unmasked_path(ins, labels, lo, hi):
    """The instructions of a K/V step's unmasked path (see the usage above)."""
    path, k, skipped_mask, seen = [], lo, False, set()
    while k <= hi and k not in seen:
        seen.add(k)
        idx, text, ctl = ins[k]
        path.append(ins[k])
        m = re.search(r"BRA\s+`\((\.L_x_\d+)\)", text)
        if m:
            target = labels[m.group(1)]
            if text.startswith("@"):
                if not skipped_mask and any("DEPBAR" in ins[j][1] for j in range(max(lo, k - 3), k)):
                    skipped_mask, k = True, target
                    continue
            elif target <= k:
                break
            else:
                k = target
                continue
        k += 1
    return path


def main():
    ins, labels = instructions(sys.argv[1])
    if len(sys.argv) == 5 and sys.argv[2] == "--unmasked":
        path = unmasked_path(ins, labels, int(sys.argv[3]), int(sys.argv[4]))
        mufu = sum("MUFU" in t for _, t, _ in path)
        print(f"unmasked step: {len(path)} instructions, {sum(stall(c) for _, _, c in path)} encoded stall cycles, {mufu} MUFU")
        return
    if len(sys.argv) >= 4:
        lo, hi = int(sys.argv[2]), int(sys.argv[3])
        for idx, text, ctl in ins[lo : hi + 1]:
            print(f"{idx:5d} {opcode(text):32s} stall {stall(ctl):2d}  wait {(ctl >> 11) & 0x3F:06b}")
        if len(sys.argv) >= 5:
            total = count = 0
            for part in sys.argv[4].split(","):
                a, b = (int(x) for x in part.split("-"))
                total += sum(stall(c) for _, _, c in ins[a : b + 1])
                count += b - a + 1
            print(f"path {sys.argv[4]}: {count} instructions, {total} encoded stall cycles")
        return
    for idx, text, _ in ins:
        m = re.search(r"BRA\s+`\((\.L_x_\d+)\)", text)
        if m and labels.get(m.group(1), idx + 1) <= idx:
            body = ins[labels[m.group(1)] : idx + 1]
            mix = Counter(opcode(t).split(".")[0] for _, t, _ in body)
            print(f"loop {body[0][0]}-{idx}: {len(body)} instructions, {sum(stall(c) for _, _, c in body)} encoded stall cycles; "
                  + ", ".join(f"{k} {v}" for k, v in mix.most_common(8)))


if __name__ == "__main__":
    main()
