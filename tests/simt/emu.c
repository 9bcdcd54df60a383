// A CPU emulator of the NVVM intrinsics the decode kernels call, for running their LLVM IR on the host
// (tests/simt/mod.rs compiles a kernel's IR for x86 with llc, with every @llvm.nvvm.* call renamed to the
// @emu.nvvm.* wrappers of wrappers.ll, which call these functions). Each GPU thread of a CTA is a pthread;
// warp-wide instructions (shfl, vote, ldmatrix, mma) meet at a barrier of the warp's 32 threads, exchange
// their operands through the warp's slots and meet again; bar.sync is a barrier of the CTA. cp.async copies
// are queued per thread and done at the cp.async.wait_group that must have completed them (a read of shared
// memory before its wait sees stale bytes, as it could on the GPU). A grid's CTAs run one at a time, or
// (emu_run_grid's `together`) all at once, each in a process of its own: its shared memory (@smem), barriers
// and bulk queue its own, device memory (emu_alloc: a shared mapping) common, as resident programs on SMs.
// Hopper (the warp-specialized kernels): shared addresses as the kernels hold them (i32, the low bits of the
// host address of @smem, which the retargeted module aligns to 256 KB), wgmma on 128-thread warpgroups
// (operands from 128B-swizzled shared memory through their descriptors, or A from registers), TMA tensor
// tiles (a 4-D map of our own layout, EmuMap, in place of the driver's CUtensorMap) landing on their
// mbarriers as the bulk copies do, and named barriers (bar.sync / bar.arrive with a thread count).
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static __thread int T_tid, T_cx, T_cy, T_cz;
static int G_nx, G_ny, G_nz, G_threads;

typedef struct {
  pthread_barrier_t bar;
  uint64_t slot[32][8];
} Warp;
static Warp warps[32];
static pthread_barrier_t cta_bar;

static void wsync(void) { pthread_barrier_wait(&warps[T_tid / 32].bar); }
static uint64_t *myslot(void) { return warps[T_tid / 32].slot[T_tid % 32]; }
static uint64_t *lslot(int lane) { return warps[T_tid / 32].slot[lane]; }

int emu_tid(void) { return T_tid; }
int emu_ctaid_x(void) { return T_cx; }
int emu_ctaid_y(void) { return T_cy; }
int emu_ctaid_z(void) { return T_cz; }
int emu_nctaid_x(void) { return G_nx; }
void emu_barrier(void) { pthread_barrier_wait(&cta_bar); }

float emu_shfl_bfly(float v, int lanemask) {
  float out;
  memcpy(myslot(), &v, 4);
  wsync();
  memcpy(&out, lslot((T_tid % 32) ^ lanemask), 4);
  wsync();
  return out;
}
float emu_shfl_idx(float v, int src) {
  float out;
  memcpy(myslot(), &v, 4);
  wsync();
  memcpy(&out, lslot(src & 31), 4);
  wsync();
  return out;
}
int emu_vote_any(int p) {
  myslot()[0] = p != 0;
  wsync();
  int any = 0;
  for (int l = 0; l < 32; l++) any |= (int)lslot(l)[0];
  wsync();
  return any;
}
unsigned emu_redux_umin(unsigned v) {
  myslot()[0] = v;
  wsync();
  unsigned m = 0xffffffffu;
  for (int l = 0; l < 32; l++) if ((unsigned)lslot(l)[0] < m) m = (unsigned)lslot(l)[0];
  wsync();
  return m;
}

// ldmatrix .x4 (.trans): lanes 8m..8m+7 give the rows of matrix m; lane l's register m holds row l/4,
// columns 2(l%4), 2(l%4)+1 (transposed: rows 2(l%4), 2(l%4)+1 of column l/4)
void emu_ldmatrix(uint8_t *addr, int trans, uint32_t *out) {
  myslot()[0] = (uint64_t)(uintptr_t)addr;
  wsync();
  int lane = T_tid % 32;
  for (int m = 0; m < 4; m++) {
    uint16_t e[2];
    for (int k = 0; k < 2; k++) {
      int row, col;
      if (!trans) { row = lane / 4; col = 2 * (lane % 4) + k; }
      else { row = 2 * (lane % 4) + k; col = lane / 4; }
      const uint8_t *rp = (const uint8_t *)(uintptr_t)lslot(8 * m + row)[0];
      memcpy(&e[k], rp + 2 * col, 2);
    }
    out[m] = (uint32_t)e[0] | ((uint32_t)e[1] << 16);
  }
  wsync();
}

static float bf16f(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }
static float f16f(uint16_t h) {
  uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
  float v;
  if (e == 0) v = ldexpf((float)m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = ldexpf((float)(m | 1024), (int)e - 25);
  return s ? -v : v;
}
static uint16_t f2bf(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  if (isnan(f)) return 0x7fc0;
  uint32_t r = u + 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(r >> 16);
}
static uint16_t f2h(float f) {
  // round to nearest even via double arithmetic on the f16 grid
  if (isnan(f)) return 0x7e00;
  uint16_t s = signbit(f) ? 0x8000 : 0;
  double a = fabs((double)f);
  if (a >= 65520.0) return s | 0x7c00;
  if (a < ldexp(1.0, -14)) { double q = nearbyint(a / ldexp(1.0, -24)); return s | (uint16_t)q; }
  int e; frexp(a, &e); // a = m·2^e, m in [0.5, 1)
  int E = e - 1;       // a in [2^E, 2^(E+1))
  double q = nearbyint(a / ldexp(1.0, E - 10));
  if (q >= 2048) { q /= 2; E += 1; }
  if (E + 15 >= 31) return s | 0x7c00;
  return s | (uint16_t)(((E + 15) << 10) | ((int)q - 1024));
}
uint32_t emu_ff2bf16x2(float hi, float lo) { return ((uint32_t)f2bf(hi) << 16) | f2bf(lo); }
uint32_t emu_ff2f16x2(float hi, float lo) { return ((uint32_t)f2h(hi) << 16) | f2h(lo); }

// mma.sync m16n8k16 row.col, f32 accumulate: A fragments a0 (row g, k 2t..), a1 (row g+8), a2 (row g,
// k 2t+8..), a3 (row g+8, k 2t+8..); B b0 (k 2t, 2t+1 of column g), b1 (k 2t+8, 2t+9); C/D c0 (g, 2t),
// c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1)
void emu_mma(uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1, float c0, float c1, float c2, float c3, int is_bf16, float *out) {
  uint64_t *s = myslot();
  s[0] = a0; s[1] = a1; s[2] = a2; s[3] = a3; s[4] = b0; s[5] = b1;
  wsync();
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; l++) {
    int g = l / 4, t = l % 4;
    uint64_t *q = lslot(l);
    for (int h = 0; h < 2; h++) {
      float (*cv)(uint16_t) = is_bf16 ? bf16f : f16f;
      A[g][2 * t + h] = cv((uint16_t)(q[0] >> (16 * h)));
      A[g + 8][2 * t + h] = cv((uint16_t)(q[1] >> (16 * h)));
      A[g][2 * t + 8 + h] = cv((uint16_t)(q[2] >> (16 * h)));
      A[g + 8][2 * t + 8 + h] = cv((uint16_t)(q[3] >> (16 * h)));
      B[2 * t + h][g] = cv((uint16_t)(q[4] >> (16 * h)));
      B[2 * t + 8 + h][g] = cv((uint16_t)(q[5] >> (16 * h)));
    }
  }
  wsync();
  int lane = T_tid % 32, g = lane / 4, t = lane % 4;
  float c[4] = {c0, c1, c2, c3};
  int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
  for (int i = 0; i < 4; i++) {
    double acc = c[i];
    for (int k = 0; k < 16; k++) acc += (double)A[rows[i]][k] * (double)B[k][cols[i]];
    out[i] = (float)acc;
  }
}

// the device buffers: a cp.async that reads outside them aborts the run (the kernels' clamps under test)
static const uint8_t *R_lo[64];
static size_t R_len[64];
static int R_n;
void emu_register(const void *p, size_t len) { R_lo[R_n] = p; R_len[R_n++] = len; }
static void check_read(const uint8_t *src, int n) {
  for (int i = 0; i < R_n; i++)
    if (src >= R_lo[i] && src + n <= R_lo[i] + R_len[i]) return;
  fprintf(stderr, "cp.async reads %d bytes at %p, outside every buffer (thread %d of CTA %d,%d,%d)\n", n, (const void *)src, T_tid, T_cx, T_cy, T_cz);
  abort();
}

// cp.async.bulk.prefetch.L2: no cache here to fill, but the rows must lie in a buffer, 16-byte aligned
void emu_prefetch(const uint8_t *src, int n) {
  if (n <= 0 || n % 16 || (uintptr_t)src % 16) {
    fprintf(stderr, "an L2 prefetch of %d bytes at %p is not 16-byte aligned (thread %d of CTA %d,%d,%d)\n", n, (const void *)src, T_tid, T_cx, T_cy, T_cz);
    abort();
  }
  check_read(src, n);
}

// cp.async: per-thread queues, done at the wait_group that must have completed them
typedef struct { uint8_t *dst; const uint8_t *src; int n, size, group; } Copy;
static __thread Copy *T_q;
static __thread int T_qn, T_qcap, T_groups;
void emu_cp_async(uint8_t *dst, const uint8_t *src, int size, int n) {
  if (n > 0) check_read(src, n);
  if (T_qn == T_qcap) { T_qcap = T_qcap ? 2 * T_qcap : 256; T_q = realloc(T_q, sizeof(Copy) * T_qcap); }
  T_q[T_qn++] = (Copy){dst, src, n, size, -1};
}
void emu_cp_commit(void) {
  for (int i = 0; i < T_qn; i++) if (T_q[i].group < 0) T_q[i].group = T_groups;
  T_groups++;
}
void emu_cp_wait(int pending) {
  int keep = 0;
  for (int i = 0; i < T_qn; i++) {
    Copy c = T_q[i];
    if (c.group >= 0 && c.group < T_groups - pending) {
      if (c.n > 0) memcpy(c.dst, c.src, c.n);
      if (c.n < c.size) memset(c.dst + c.n, 0, c.size - c.n);
    } else T_q[keep++] = c;
  }
  T_qn = keep;
}

// mbarriers with transaction counts and TMA tensor copies: a barrier is its 8 bytes of shared memory, its
// state kept here by address (reset by mbarrier.init in each CTA); a tensor copy is queued on its barrier and lands when a thread tests that barrier (so a read of the slot before the
// wait sees stale bytes, as it could on the GPU), completing its bytes then. A phase completes when its
// arrivals have come and its transaction count is back at 0 (it may go negative meanwhile, as on the GPU).
typedef struct { void *addr; int count, pending, phase; long tx; } Mbar;
// A tensor map: a [dims[3], dims[2], dims[1], dims[0]] tensor (dims innermost first, as the driver takes
// them) at base, byte strides of dims 1..3, boxes of 64 elements × box_rows rows, elements of elem bytes
// (flashgen-runtime's tma::tensor_map writes the same fields into a CUtensorMap).
typedef struct { uint8_t *base; uint64_t dims[4]; uint64_t strides[3]; uint32_t box_rows; uint32_t elem; } EmuMap;
// A TMA tensor copy in flight: the box at coordinates c of a copy of the map (the kernel's parameter may be
// gone when it lands), into the 128B-swizzled shared bytes at dst, n bytes counted on bar.
typedef struct { uint8_t *dst; int n; Mbar *bar; EmuMap map; int64_t c[4]; } Bulk;
static void tile_land(const Bulk *b);
static Mbar M_bars[64];
static int M_n;
static Bulk M_q[4096];
static int M_qn;
static pthread_mutex_t M_mu = PTHREAD_MUTEX_INITIALIZER;
static Mbar *mbar_of(void *addr) {
  for (int i = 0; i < M_n; i++) if (M_bars[i].addr == addr) return &M_bars[i];
  if (M_n == 64) { fprintf(stderr, "more than 64 mbarriers\n"); abort(); }
  M_bars[M_n] = (Mbar){addr, 0, 0, 0, 0};
  return &M_bars[M_n++];
}
static void mbar_settle(Mbar *m) {
  if (m->pending == 0 && m->tx == 0) { m->phase ^= 1; m->pending = m->count; }
}
static void mbar_init(void *addr, int count) {
  pthread_mutex_lock(&M_mu);
  Mbar *m = mbar_of(addr);
  m->count = m->pending = count; m->phase = 0; m->tx = 0;
  pthread_mutex_unlock(&M_mu);
}
void emu_mbar_expect_tx(void *addr, int bytes) {
  pthread_mutex_lock(&M_mu);
  Mbar *m = mbar_of(addr);
  m->tx += bytes;
  m->pending -= 1;
  mbar_settle(m);
  pthread_mutex_unlock(&M_mu);
}
int emu_mbar_try_wait(void *addr, int parity) {
  pthread_mutex_lock(&M_mu);
  Mbar *m = mbar_of(addr);
  int keep = 0;
  for (int i = 0; i < M_qn; i++) {
    Bulk b = M_q[i];
    if (b.bar == m) {
      tile_land(&b);
      m->tx -= b.n;
      mbar_settle(m);
    }
    else M_q[keep++] = b;
  }
  M_qn = keep;
  int done = m->phase != parity;
  pthread_mutex_unlock(&M_mu);
  if (!done) sched_yield();
  return done;
}

float emu_ex2(float x) { return exp2f(x); }
float emu_lg2(float x) { return log2f(x); }
float emu_rcp(float x) { return 1.0f / x; }


// ---- Hopper ----
// A shared address as the kernels hold it (i32: the low 32 bits of the host address; @smem is 256 KB
// aligned, so it never straddles a 4 GB boundary) or as a descriptor holds it (18 bits: the offset in @smem).
static uint8_t *sh(uint8_t *smem, uint32_t a) { return smem + (uint32_t)(a - (uint32_t)(uintptr_t)smem); }
static void smem_aligned(uint8_t *smem) {
  if ((uintptr_t)smem & 0x3FFFF) { fprintf(stderr, "@smem is not 256 KB aligned\n"); abort(); }
}
// the 128B swizzle: a shared offset's 16-byte chunk (bits 4-6) XOR its row in the 1024-byte atom (bits 7-9)
static uint32_t swz128(uint32_t off) { return off ^ (((off >> 7) & 7) << 4); }

void emu_mbar_init_n(uint8_t *smem, uint32_t a, int count) { mbar_init(sh(smem, a), count); }
// (an arrival is an expect_tx of no bytes)
void emu_mbar_arrive_r(uint8_t *smem, uint32_t a) { emu_mbar_expect_tx(sh(smem, a), 0); }
void emu_mbar_expect_tx_r(uint8_t *smem, uint32_t a, int bytes) { emu_mbar_expect_tx(sh(smem, a), bytes); }
int emu_mbar_try_wait_r(uint8_t *smem, uint32_t a, int parity) { return emu_mbar_try_wait(sh(smem, a), parity); }
uint32_t emu_ld_shared_u32(uint8_t *smem, uint32_t a) { uint32_t v; memcpy(&v, sh(smem, a), 4); return v; }
void emu_st_shared_u32(uint8_t *smem, uint32_t a, uint32_t v) { memcpy(sh(smem, a), &v, 4); }
uint32_t emu_atom_add1(uint32_t *p) { return __atomic_fetch_add(p, 1u, __ATOMIC_SEQ_CST); }
void emu_store_zero2(uint32_t *p, uint32_t *q) { __atomic_store_n(p, 0u, __ATOMIC_SEQ_CST); __atomic_store_n(q, 0u, __ATOMIC_SEQ_CST); }

void emu_tma_load(uint8_t *smem, uint32_t dst, const EmuMap *map, int c0, int c1, int c2, int c3, uint32_t bar) {
  smem_aligned(smem);
  pthread_mutex_lock(&M_mu);
  if (M_qn == 4096) { fprintf(stderr, "more than 4096 bulk copies in flight\n"); abort(); }
  // (the box's bytes count on the barrier whether or not they lie inside the tensor: TMA fills zeros)
  M_q[M_qn++] = (Bulk){.dst = sh(smem, dst), .n = (int)(map->box_rows * 64 * map->elem), .bar = mbar_of(sh(smem, bar)), .map = *map, .c = {c0, c1, c2, c3}};
  pthread_mutex_unlock(&M_mu);
}
static void tile_land(const Bulk *b) {
  const EmuMap *m = &b->map;
  uint8_t *smem = b->dst - ((uintptr_t)b->dst & 0x3FFFF);
  uint32_t off0 = (uint32_t)(b->dst - smem);
  if (b->c[2] < 0 || b->c[3] < 0 || (uint64_t)b->c[2] >= m->dims[2] || (uint64_t)b->c[3] >= m->dims[3]) {
    fprintf(stderr, "TMA box at head %lld, batch %lld outside the map\n", (long long)b->c[2], (long long)b->c[3]);
    abort();
  }
  for (uint32_t r = 0; r < m->box_rows; r++)
    for (uint32_t e = 0; e < 64; e++) {
      int64_t col = b->c[0] + e, row = b->c[1] + r;
      uint8_t *d = smem + swz128(off0 + r * 64 * m->elem + e * m->elem);
      if (col < 0 || row < 0 || (uint64_t)col >= m->dims[0] || (uint64_t)row >= m->dims[1]) { memset(d, 0, m->elem); continue; }
      const uint8_t *s = m->base + (uint64_t)b->c[3] * m->strides[2] + (uint64_t)b->c[2] * m->strides[1] + (uint64_t)row * m->strides[0] + (uint64_t)col * m->elem;
      check_read(s, (int)m->elem);
      memcpy(d, s, m->elem);
    }
}

// named barriers: bar.sync waits until `count` threads have arrived (bar.arrive counts without waiting)
typedef struct { pthread_mutex_t mu; pthread_cond_t cv; int arrived; unsigned gen; } NamedBar;
static NamedBar N_bars[16];
static void named_reset(void) {
  for (int i = 0; i < 16; i++) {
    pthread_mutex_init(&N_bars[i].mu, NULL); pthread_cond_init(&N_bars[i].cv, NULL);
    N_bars[i].arrived = 0; N_bars[i].gen = 0;
  }
}
static void named(int id, int count, int wait) {
  NamedBar *b = &N_bars[id & 15];
  pthread_mutex_lock(&b->mu);
  unsigned gen = b->gen;
  if (++b->arrived == count) { b->arrived = 0; b->gen++; pthread_cond_broadcast(&b->cv); }
  else if (wait) while (b->gen == gen) pthread_cond_wait(&b->cv, &b->mu);
  pthread_mutex_unlock(&b->mu);
}
void emu_bar_sync(int id, int count) { named(id, count, 1); }
void emu_bar_arrive(int id, int count) { named(id, count, 0); }

// wgmma m64nNk16 (f32 += bf16/f16 products) of one warpgroup: every thread brings its accumulators (and A's
// registers); the first gathers A and B, each thread then computes its own fragment: thread i of the
// warpgroup (warp w = i / 32, g = lane / 4, t = lane % 4) holds, for each n8 tile j, D[16w + g][8j + 2t],
// D[16w + g][8j + 2t + 1], D[16w + g + 8][8j + 2t], D[16w + g + 8][8j + 2t + 1]; A's registers are the
// mma.sync A fragment of rows 16w .. 16w + 15.
typedef struct {
  pthread_barrier_t bar;
  uint32_t a[128][4];
  uint64_t da[128], db[128];
  float A[64][16], B[16][256];
} Warpgroup;
static Warpgroup W_groups[8];
static float elem16(const uint8_t *p, int bf16) { uint16_t h; memcpy(&h, p, 2); return bf16 ? bf16f(h) : f16f(h); }
// element (mn, k) of a 128B-swizzled operand at descriptor d: K-major (rows of mn, k contiguous; 8-row
// groups SBO apart) or MN-major (rows of k, mn contiguous; 8-row groups SBO apart, 64-element panels LBO apart)
static float operand(uint8_t *smem, uint64_t d, int mn, int k, int mn_major, int bf16) {
  uint32_t start = (uint32_t)(d & 0x3FFF) << 4, lbo = (uint32_t)((d >> 16) & 0x3FFF) << 4, sbo = (uint32_t)((d >> 32) & 0x3FFF) << 4;
  if ((d >> 62) != 1) { fprintf(stderr, "wgmma descriptor 0x%llx: not 128B-swizzled\n", (unsigned long long)d); abort(); }
  uint32_t off = mn_major ? start + (mn / 64) * lbo + (k / 8) * sbo + (k % 8) * 128 + (mn % 64) * 2
                          : start + (mn / 8) * sbo + (mn % 8) * 128 + k * 2;
  return elem16(smem + swz128(off & 0x3FFFF), bf16);
}
void emu_wgmma(uint8_t *smem, float *acc, int n, const uint32_t *a_regs, uint64_t da, uint64_t db, int scale_d, int tnsp_a, int tnsp_b, int bf16) {
  smem_aligned(smem);
  Warpgroup *w = &W_groups[T_tid / 128];
  int i = T_tid % 128;
  if (a_regs) memcpy(w->a[i], a_regs, 16);
  w->da[i] = da; w->db[i] = db;
  pthread_barrier_wait(&w->bar);
  if (i == 0) {
    for (int j = 0; j < 128; j++)
      if (w->db[j] != db || (!a_regs && w->da[j] != da)) { fprintf(stderr, "wgmma: descriptors differ within the warpgroup (thread %d)\n", T_tid + j); abort(); }
    for (int j = 0; j < 128; j++) {
      int r = 16 * (j / 32) + (j % 32) / 4, t = (j % 32) % 4;
      for (int h = 0; h < 2; h++)
        for (int q = 0; q < 4; q++) {
          int row = r + 8 * (q % 2), col = 2 * t + 8 * (q / 2) + h;
          if (a_regs) { uint16_t x = (uint16_t)(w->a[j][q] >> (16 * h)); w->A[row][col] = bf16 ? bf16f(x) : f16f(x); }
        }
    }
    if (!a_regs)
      for (int m = 0; m < 64; m++) for (int k = 0; k < 16; k++) w->A[m][k] = operand(smem, da, m, k, tnsp_a, bf16);
    for (int k = 0; k < 16; k++) for (int c = 0; c < n; c++) w->B[k][c] = operand(smem, db, c, k, tnsp_b, bf16);
  }
  pthread_barrier_wait(&w->bar);
  int warp = i / 32, g = (i % 32) / 4, t = (i % 32) % 4;
  for (int j = 0; j < n / 8; j++)
    for (int e = 0; e < 4; e++) {
      int row = 16 * warp + g + 8 * (e / 2), col = 8 * j + 2 * t + e % 2;
      double s = scale_d ? acc[4 * j + e] : 0.0;
      for (int k = 0; k < 16; k++) s += (double)w->A[row][k] * (double)w->B[k][col];
      acc[4 * j + e] = (float)s;
    }
  pthread_barrier_wait(&w->bar);
}

// the fused backward's copies out of shared memory, done where they are issued (a thread that waits for
// them finds them done): a bulk store of n bytes, and a bulk f32 reduction (one at a time, as the copy
// engine's adds are atomic per element)
static void check_write(const uint8_t *dst, int n) {
  for (int i = 0; i < R_n; i++)
    if (dst >= R_lo[i] && dst + n <= R_lo[i] + R_len[i]) return;
  fprintf(stderr, "a bulk copy writes %d bytes at %p, outside every buffer (thread %d of CTA %d,%d,%d)\n", n, (const void *)dst, T_tid, T_cx, T_cy, T_cz);
  abort();
}
uint8_t *emu_sh(uint8_t *smem, uint32_t a) { return sh(smem, a); }
void emu_bulk_store(uint8_t *dst, const uint8_t *src, int n) {
  check_write(dst, n);
  memcpy(dst, src, n);
}
// (element by element, a compare-and-swap each: the CTAs adding into one tensor may be processes)
void emu_bulk_reduce_add_f32(uint8_t *dst, const uint8_t *src, int n) {
  check_write(dst, n);
  for (int i = 0; i < n / 4; i++) {
    uint32_t *at = (uint32_t *)(dst + 4 * i), old = __atomic_load_n(at, __ATOMIC_RELAXED), sum;
    float a, b;
    memcpy(&b, src + 4 * i, 4);
    do {
      memcpy(&a, &old, 4);
      a += b;
      memcpy(&sum, &a, 4);
    } while (!__atomic_compare_exchange_n(at, &old, sum, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  }
}
// cp.async.mbarrier.arrive.noinc: the barrier sees this thread's arrival once its cp.async copies have
// landed (here: at once, landing them)
void emu_cp_arrive_noinc(uint8_t *bar) {
  for (int i = 0; i < T_qn; i++) if (T_q[i].group < 0) T_q[i].group = T_groups;
  T_groups++;
  emu_cp_wait(0);
  emu_mbar_expect_tx(bar, 0);
}
// (the kernels read with acquire in their spins on another program's release: yield the CPU to it)
uint32_t emu_ld_acquire(uint32_t *p) {
  uint32_t v = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  sched_yield();
  return v;
}
void emu_st_release(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
void emu_st_shared_v4f32(uint8_t *at, float x, float y, float z, float w) {
  float v[4] = {x, y, z, w};
  memcpy(at, v, 16);
}
// __syncwarp with the full mask (the kernels' only one)
void emu_warp_sync(int mask) {
  if (mask != -1) { fprintf(stderr, "bar.warp.sync with mask 0x%x\n", mask); abort(); }
  wsync();
}
// %globaltimer at a tenth of the wall clock: the fused kernels' lock waits trap after 10 s (seconds where
// a turn takes microseconds on the GPU), and an emulated program's turn, thousands of threads on two cores
// beside other test processes, may take longer (a CTA of a together-run grid failed twice, silently, while
// two emulated test binaries shared the two cores; the same grids pass alone and with this clock); a real
// deadlock still traps, after 100 s, inside the run's 600 s
uint64_t emu_globaltimer(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return ((uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec) / 10;
}

// the kernel, called with the argument block the generated main fills
typedef void (*Launch)(void);
static Launch G_launch;
static int S_cx, S_cy, S_cz;
static void *thread_main(void *arg) {
  T_tid = (int)(intptr_t)arg;
  T_cx = S_cx; T_cy = S_cy; T_cz = S_cz;
  T_qn = 0; T_groups = 0;
  G_launch();
  emu_cp_wait(0);
  return NULL;
}
// device memory: a shared mapping, so CTAs run as processes (`together`) write where the others read
void *emu_alloc(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { perror("emu_alloc"); exit(2); }
  return p;
}
static void run_cta(int x, int y, int z, int threads) {
  static pthread_t th[1024];
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 20);
  S_cx = x; S_cy = y; S_cz = z;
  M_n = 0; M_qn = 0;
  pthread_barrier_init(&cta_bar, NULL, threads);
  for (int w = 0; w < threads / 32; w++) pthread_barrier_init(&warps[w].bar, NULL, 32);
  for (int w = 0; w < threads / 128; w++) pthread_barrier_init(&W_groups[w].bar, NULL, 128);
  named_reset();
  for (int t = 0; t < threads; t++) pthread_create(&th[t], &attr, thread_main, (void *)(intptr_t)t);
  for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
  pthread_barrier_destroy(&cta_bar);
  for (int w = 0; w < threads / 32; w++) pthread_barrier_destroy(&warps[w].bar);
  for (int w = 0; w < threads / 128; w++) pthread_barrier_destroy(&W_groups[w].bar);
}
// together: every CTA at once, a forked process each (a program that waits on one launched after it, as
// bwd_fused_up's folded grid does, needs that one running); a CTA that fails fails the run.
void emu_run_grid(int nx, int ny, int nz, int threads, Launch launch, int together) {
  G_nx = nx; G_ny = ny; G_nz = nz; G_threads = threads; G_launch = launch;
  if (!together) {
    for (int z = 0; z < nz; z++)
      for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++) run_cta(x, y, z, threads);
    return;
  }
  fflush(NULL);
  for (int z = 0; z < nz; z++)
    for (int y = 0; y < ny; y++)
      for (int x = 0; x < nx; x++) {
        pid_t pid = fork();
        if (pid < 0) { perror("fork"); exit(2); }
        if (pid == 0) {
          prctl(PR_SET_PDEATHSIG, SIGKILL);  // (a deadlocked run's timeout kills the parent: its CTAs with it)
          run_cta(x, y, z, threads);
          fflush(NULL);
          _exit(0);
        }
      }
  int failed = 0, status;
  while (wait(&status) > 0)
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      // (SIGILL: the kernel's trap, e.g. a lock wait past its timeout; SIGABRT: the emulator's own checks)
      if (WIFSIGNALED(status)) fprintf(stderr, "a CTA died of signal %d (%s)\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
      else fprintf(stderr, "a CTA exited with status %d\n", WEXITSTATUS(status));
      failed = 1;
    }
  if (failed) { fprintf(stderr, "a CTA of the grid run together failed\n"); exit(4); }
}
