/*
 * quiltpriv.inference._kernel: exact joint marginals of a discrete Bayesian network by bucket
 * elimination, the compiled path of quiltpriv.influence (inference="auto").
 *
 * It does what quiltpriv.influence._bucket_eliminate does, without the per-step Python and
 * numpy call overhead that dominates the planner's small queries:
 *
 *   1. the ancestral set of the query, walked upwards from the query nodes, taking a node's
 *      folded CPD (its private, single-child ancestors summed in once per Theta) whenever
 *      none of those ancestors is queried;
 *   2. an elimination order for the non-query variables: the order given at construction
 *      (quiltpriv gives the topological one) restricted to the ancestral set, a greedy
 *      min-weight or min-fill order of the query's own factor graph, or for expensive queries
 *      a few randomised greedy orders, whichever is cheapest (the sum of the tables it builds,
 *      simulated symbolically; near ties also count the factors each step multiplies) among
 *      those whose largest table fits in max_table;
 *   3. the eliminations themselves (each one product-and-sum over the factors holding the
 *      variable), then the product of what is left onto the query's axes.
 *
 * All arithmetic is in double, as numpy's einsum does it; only the order of the (exact in
 * real arithmetic) sums and products differs, so results agree to rounding. Network.influence
 * also applies Definition 8 to the joint, so the planner's query is one call. Python builds one
 * Network per member of Theta (the tables' buffers are held, not copied) and validates queries
 * before calling; the checks here guard memory safety.
 *
 * Underflow. The rounding bound quiltpriv applies to a float64 result (relative error gamma_K
 * per entry) holds only if no operation underflowed: a product or quotient that falls below
 * float64's normal range loses relative precision, and one flushed to zero can turn a large
 * ratio of tiny conditionals into 0/0. IEEE 754 raises the underflow flag for every tiny
 * inexact result (also when the processor flushes it to zero), so joint() and influence()
 * clear the flag, compute, and report whether it was raised; quiltpriv then trusts the result
 * only where its static bound shows that nothing could underflow, and otherwise redoes the
 * query in exact arithmetic. A tiny result that is exact loses nothing and needs no flag. The
 * flag is per thread, and nothing else runs on this thread in between.
 *
 * Deadline. joint(), price() and influence() take an optional budget in seconds (from the
 * caller's deadline; the clocks of Python and C need not share an origin, so the budget is
 * relative and measured here on the monotonic clock). The pricing loops look at the clock
 * every few dozen steps and the numeric elimination at every step and every CLOCK_EVERY
 * output rows within a step (one step of a large query can take minutes); when it has passed,
 * the call returns LATE (joint, influence: 3; price: -1.0) with nothing computed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <fenv.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(_WIN32)
#include <windows.h>
#endif

#define KERNEL_ABI 4
#ifndef KERNEL_SOURCE_SHA256 /* set by CMakeLists.txt: the SHA-256 of this file */
#define KERNEL_SOURCE_SHA256 ""
#endif

/* mode 0 prices the min-fill order only when the cheaper of the others builds more table
   entries than this (measured on the bundled networks: below, the ordering costs more than
   it can save) */
#define FILL_FROM 4096.0

/* mode 0 prices TRIES randomised greedy orders when the best deterministic order builds more
   than RANDOM_FROM entries (measured on munin's largest queries: a try prices in 3-4 us, the
   eliminations take 150-300 us, and on the slowest the best of four runs a third faster) */
#define TRIES 4
#define RANDOM_FROM 100000.0

/* mode 0 prices HARD_TRIES randomised greedy orders when no deterministic order fits
   max_table, before giving up on the query (pricing is symbolic: on diabetes, the largest
   bundled network for this, a try costs well under a millisecond, and a refusal sends the
   planner to a bound or to the trivial quilt, which costs noise) */
#define HARD_TRIES 64

/* mode 0 prices a further greedy order only when the best order so far builds at least
   PRICE_RATIO times as many table entries as pricing that order takes steps (see `pricing`
   below). Measured, all nodes sensitive: a 1,000-node layered network planned in 7 s instead
   of 17 s (its queries' ancestral sets hold hundreds of variables and small tables, so the
   greedy orders cost more than they save); munin, andes and pathfinder unchanged within the
   noise of a shared machine. A build may override it (-DPRICE_RATIO=...). */
#ifndef PRICE_RATIO
#define PRICE_RATIO 4.0
#endif

/* mode 0 re-prices the two cheapest orders with price_by_factors when the second costs at most
   NEAR_TIE times the first (pathfinder: orders within 1% by tables differ 1.4x in time) */
#define NEAR_TIE 1.25

/* product_sum runs the block path when its last output axis times the summed variable has
   fewer than BLOCK_FROM cells, with blocks of at most BLOCK_CELLS cells (their offset lists,
   8 bytes a cell per factor, stay in the first-level caches) */
#define BLOCK_FROM 32
#define BLOCK_CELLS 512

/* Seconds on a monotonic clock (any origin: only differences are used). */
static double
now_seconds(void)
{
#if defined(_WIN32)
    return (double)GetTickCount64() / 1000.0;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
}

/* Whether the deadline `stop` (now_seconds() scale; INFINITY: none) has passed. */
static int
past(double stop)
{
    return stop < INFINITY && now_seconds() > stop;
}

/* The deadline of a call given its budget in seconds (negative: none). */
static double
stop_of(double budget)
{
    return budget < 0 ? INFINITY : now_seconds() + budget;
}

/* What joint() and influence() return when the deadline passed (price(): -1.0). */
#define LATE 3

typedef struct {
    int present;      /* folded entries: 0 when the node has no fold */
    int nv;           /* variables of the table, in axis order (global node indices) */
    int *vars;
    const double *data;
    Py_buffer view;   /* holds the table's memory */
    int has_view;
    int nups;         /* nodes the ancestral walk continues to */
    int *ups;
    int npriv;        /* folded only: the private ancestors summed into the table */
    int *priv;
} Fac;

typedef struct {
    PyObject_HEAD
    int ready;        /* set once __init__ has succeeded: a half-built Network is refused */
    int n;
    int *card;
    int *pos;         /* position of each node in the order given at construction */
    Fac *base;
    Fac *folded;
} Network;

/* ---- construction ------------------------------------------------------------------------ */

/* obj as a tuple (a new reference), or NULL with a TypeError that names it. A tuple rather
 * than the "fast sequence" (list or tuple): that one's item macros are not in the limited API
 * (abi3), and the tuple's functions are. */
static PyObject *
as_tuple(PyObject *obj, const char *what)
{
    PyObject *t = PySequence_Tuple(obj);
    if (t == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, what);
    }
    return t;
}

static int
int_seq(PyObject *obj, int n_bound, int **out, int *len, const char *what)
{
    PyObject *seq = as_tuple(obj, what);
    if (seq == NULL)
        return -1;
    Py_ssize_t m = PyTuple_Size(seq);
    int *buf = PyMem_Malloc(sizeof(int) * (size_t)(m > 0 ? m : 1));
    if (buf == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        long v = PyLong_AsLong(PyTuple_GetItem(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            PyMem_Free(buf);
            Py_DECREF(seq);
            return -1;
        }
        if (v < INT_MIN || v > INT_MAX || (n_bound >= 0 && (v < 0 || v >= n_bound))) {
            PyErr_Format(PyExc_ValueError, "%s: index %ld out of range", what, v);
            PyMem_Free(buf);
            Py_DECREF(seq);
            return -1;
        }
        buf[i] = (int)v;
    }
    Py_DECREF(seq);
    *out = buf;
    *len = (int)m;
    return 0;
}

static void
fac_clear(Fac *f)
{
    PyMem_Free(f->vars);
    PyMem_Free(f->ups);
    PyMem_Free(f->priv);
    if (f->has_view)
        PyBuffer_Release(&f->view);
    memset(f, 0, sizeof(Fac));
}

static int
is_float64(const Py_buffer *view)
{
    const char *fmt = view->format ? view->format : "B";
    return view->itemsize == 8 &&
           (strcmp(fmt, "d") == 0 || strcmp(fmt, "<d") == 0 || strcmp(fmt, "=d") == 0);
}

/* (scope, table, ups) or, for a fold, (private, scope, table, ups) */
static int
fac_parse(Network *self, PyObject *item, Fac *f, int with_private)
{
    int want = with_private ? 4 : 3;
    if (!PyTuple_Check(item) || PyTuple_Size(item) != want) {
        PyErr_Format(PyExc_TypeError, "factor entries must be %d-tuples", want);
        return -1;
    }
    int k = 0;
    if (with_private) {
        if (int_seq(PyTuple_GetItem(item, 0), self->n, &f->priv, &f->npriv, "private") < 0)
            return -1;
        k = 1;
    }
    if (int_seq(PyTuple_GetItem(item, k), self->n, &f->vars, &f->nv, "scope") < 0)
        return -1;
    if (int_seq(PyTuple_GetItem(item, k + 2), self->n, &f->ups, &f->nups, "ups") < 0)
        return -1;
    for (int i = 0; i < f->nv; i++)
        for (int j = 0; j < i; j++)
            if (f->vars[i] == f->vars[j]) {
                PyErr_SetString(PyExc_ValueError, "scope has a repeated variable");
                return -1;
            }
    if (PyObject_GetBuffer(PyTuple_GetItem(item, k + 1), &f->view,
                           PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    f->has_view = 1;
    if (!is_float64(&f->view)) {
        PyErr_SetString(PyExc_TypeError, "tables must be C-contiguous float64");
        return -1;
    }
    Py_ssize_t size = 1;
    for (int i = 0; i < f->nv; i++)
        size *= self->card[f->vars[i]];
    if (f->view.len != size * 8) {
        PyErr_SetString(PyExc_ValueError, "table size does not match its scope");
        return -1;
    }
    f->data = (const double *)f->view.buf;
    f->present = 1;
    return 0;
}

static void
Network_dealloc(Network *self)
{
    if (self->base)
        for (int i = 0; i < self->n; i++)
            fac_clear(&self->base[i]);
    if (self->folded)
        for (int i = 0; i < self->n; i++)
            fac_clear(&self->folded[i]);
    PyMem_Free(self->base);
    PyMem_Free(self->folded);
    PyMem_Free(self->card);
    PyMem_Free(self->pos);
    /* a heap type (PyType_FromSpec): its instances hold a reference to it */
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    freefunc free_self = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_self(self);
    Py_DECREF(type);
}

static int
Network_init(Network *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"cards", "position", "base", "folded", NULL};
    PyObject *cards, *position, *base, *folded;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO", kwlist, &cards, &position, &base,
                                     &folded))
        return -1;
    if (self->card != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Network cannot be initialised twice");
        return -1;
    }
    int n, npos;
    if (int_seq(cards, -1, &self->card, &n, "cards") < 0)
        return -1;
    self->n = n;
    for (int i = 0; i < n; i++)
        if (self->card[i] < 1) {
            PyErr_SetString(PyExc_ValueError, "cardinalities must be positive");
            return -1;
        }
    if (int_seq(position, n, &self->pos, &npos, "position") < 0)
        return -1;
    if (npos != n) {
        PyErr_SetString(PyExc_ValueError, "position must have one entry per node");
        return -1;
    }
    PyObject *bseq = as_tuple(base, "base");
    if (bseq == NULL)
        return -1;
    PyObject *fseq = as_tuple(folded, "folded");
    if (fseq == NULL) {
        Py_DECREF(bseq);
        return -1;
    }
    int rc = -1;
    if (PyTuple_Size(bseq) != n || PyTuple_Size(fseq) != n) {
        PyErr_SetString(PyExc_ValueError, "base and folded must have one entry per node");
        goto done;
    }
    self->base = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(Fac));
    self->folded = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(Fac));
    if (self->base == NULL || self->folded == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int i = 0; i < n; i++) {
        if (fac_parse(self, PyTuple_GetItem(bseq, i), &self->base[i], 0) < 0)
            goto done;
        PyObject *fi = PyTuple_GetItem(fseq, i);
        if (fi != Py_None && fac_parse(self, fi, &self->folded[i], 1) < 0)
            goto done;
    }
    rc = 0;
    self->ready = 1;
done:
    Py_DECREF(bseq);
    Py_DECREF(fseq);
    return rc;
}

/* ---- one query --------------------------------------------------------------------------- */

typedef struct {          /* a factor during elimination: variables are local ids */
    int nv;
    int *vars;
    const double *data;
    double *owned;        /* data, when this query allocated it */
    int alive;
} Work;

typedef struct {          /* incidence lists: local variable -> factors holding it */
    int *head, *next, *fid;
    int used, cap;
} Inc;

static int
inc_add(Inc *inc, int var, int f)
{
    if (inc->used == inc->cap) {
        int cap = inc->cap * 2 + 16;
        int *nx = realloc(inc->next, sizeof(int) * (size_t)cap);
        if (nx == NULL)
            return -1;
        inc->next = nx;
        int *fi = realloc(inc->fid, sizeof(int) * (size_t)cap);
        if (fi == NULL)
            return -1;
        inc->fid = fi;
        inc->cap = cap;
    }
    inc->fid[inc->used] = f;
    inc->next[inc->used] = inc->head[var];
    inc->head[var] = inc->used++;
    return 0;
}

typedef uint64_t word;
#if defined(_MSC_VER) /* untested: the build is optional, a failure leaves the Python path */
#include <intrin.h>
static __inline int ctz64(uint64_t x) { unsigned long i; _BitScanForward64(&i, x); return (int)i; }
static __inline int popcount64(uint64_t x) { return (int)__popcnt64(x); }
#else
#define ctz64(x) __builtin_ctzll(x)
#define popcount64(x) __builtin_popcountll(x)
#endif
#define BIT(s, i) (((s)[(i) >> 6] >> ((i)&63)) & 1u)
#define SETBIT(s, i) ((s)[(i) >> 6] |= ((word)1 << ((i)&63)))
#define CLRBIT(s, i) ((s)[(i) >> 6] &= ~((word)1 << ((i)&63)))

/* Table size built by eliminating x now: card x times its current neighbours' cards. */
static double
weight(const word *adj, int W, int x, const int *lcard)
{
    const word *row = adj + (size_t)x * W;
    double w = lcard[x];
    for (int b = 0; b < W; b++) {
        word bits = row[b];
        while (bits) {
            int u = b * 64 + ctz64(bits);
            bits &= bits - 1;
            w *= lcard[u];
        }
    }
    return w;
}

static void
eliminate_symbolic(word *adj, int W, int x)
{
    word *row = adj + (size_t)x * W;
    for (int b = 0; b < W; b++) {
        word bits = row[b];
        while (bits) {
            int u = b * 64 + ctz64(bits);
            bits &= bits - 1;
            word *ru = adj + (size_t)u * W;
            for (int c = 0; c < W; c++)
                ru[c] |= row[c];
            CLRBIT(ru, u);
            CLRBIT(ru, x);
        }
    }
    memset(row, 0, sizeof(word) * (size_t)W);
}

/* Cost (sum of the products' sizes) and largest table built (a step's result, its summed
   variable gone) of eliminating `order` on a copy of adj. It stops at the first table above
   max_table (the order is refused; the cost is then partial), and sets *late when the deadline
   `stop` passed. */
static void
simulate(const word *adj0, word *adj, int k, int W, const int *order, int m, const int *lcard,
         double max_table, double stop, double *cost, double *biggest, int *late)
{
    memcpy(adj, adj0, sizeof(word) * (size_t)k * W);
    double c = 0, big = 0;
    for (int i = 0; i < m && big <= max_table; i++) {
        if ((i & 63) == 63 && past(stop)) {
            *late = 1;
            break;
        }
        double w = weight(adj, W, order[i], lcard);
        c += w;
        /* the table built is the step's result, without x: product_sum sums x out as it
           multiplies (as the Python path's max_table counts it) */
        if (w / lcard[order[i]] > big)
            big = w / lcard[order[i]];
        eliminate_symbolic(adj, W, order[i]);
    }
    *cost = c;
    *biggest = big;
}

/* Fill-in of eliminating x now: pairs of its neighbours not yet adjacent. */
static double
fill_in(const word *adj, int W, int x)
{
    const word *row = adj + (size_t)x * W;
    long missing = 0, deg = 0;
    for (int b = 0; b < W; b++) {
        word bits = row[b];
        while (bits) {
            int u = b * 64 + ctz64(bits);
            bits &= bits - 1;
            const word *ru = adj + (size_t)u * W;
            for (int c = 0; c < W; c++)
                missing += popcount64(row[c] & ~ru[c]);
            deg++;
        }
    }
    return (double)((missing - deg) / 2); /* u itself is in row, not in adj[u] */
}

enum { BY_WEIGHT, BY_FILL };

static double
greedy_score(const word *adj, int W, int x, const int *lcard, int kind, const double *noise)
{
    if (kind == BY_WEIGHT) {
        double w = weight(adj, W, x, lcard);
        return noise ? w * (1 + 0.5 * noise[x]) : w;
    }
    return fill_in(adj, W, x) + (noise ? noise[x] : 0);
}

/* Greedy elimination order by `kind` (min-weight or min-fill; with
   `noise`, randomised: weights scaled by up to 1.5, fill-ins offset by under 1), ties to the
   lower node index, with its cost (sum of the tables it builds) and largest table. As
   simulate(), it stops at the first table above max_table and when the deadline passes. */
static void
greedy(const word *adj0, word *adj, int k, int W, const int *elim, int m, const int *lcard,
       const int *glob, int kind, const double *noise, int *order, double *score, char *done,
       word *saved, double max_table, double stop, double *cost, double *biggest, int *late)
{
    memcpy(adj, adj0, sizeof(word) * (size_t)k * W);
    for (int i = 0; i < m; i++) {
        int x = elim[i];
        score[x] = greedy_score(adj, W, x, lcard, kind, noise);
        done[x] = 0;
    }
    word *aff = saved + W;
    double c = 0, big = 0;
    for (int step = 0; step < m && big <= max_table; step++) {
        if ((step & 15) == 15 && past(stop)) {
            *late = 1;
            break;
        }
        int best = -1;
        for (int i = 0; i < m; i++) {
            int x = elim[i];
            if (done[x])
                continue;
            if (best < 0 || score[x] < score[best] ||
                (score[x] == score[best] && glob[x] < glob[best]))
                best = x;
        }
        double w = (kind == BY_WEIGHT && !noise) ? score[best] : weight(adj, W, best, lcard);
        c += w;
        if (w / lcard[best] > big) /* the step's result, as in simulate() */
            big = w / lcard[best];
        order[step] = best;
        done[best] = 1;
        /* Scores that change: a weight, of the neighbours; a fill-in, also of their
           neighbours (edges appeared among the neighbours' neighbourhoods). */
        memcpy(saved, adj + (size_t)best * W, sizeof(word) * (size_t)W);
        eliminate_symbolic(adj, W, best);
        memcpy(aff, saved, sizeof(word) * (size_t)W);
        if (kind != BY_WEIGHT)
            for (int b = 0; b < W; b++) {
                word bits = saved[b];
                while (bits) {
                    int u = b * 64 + ctz64(bits);
                    bits &= bits - 1;
                    const word *ru = adj + (size_t)u * W;
                    for (int d = 0; d < W; d++)
                        aff[d] |= ru[d];
                }
            }
        for (int b = 0; b < W; b++) {
            word bits = aff[b];
            while (bits) {
                int u = b * 64 + ctz64(bits);
                bits &= bits - 1;
                if (!done[u])
                    score[u] = greedy_score(adj, W, u, lcard, kind, noise);
            }
        }
    }
    *cost = c;
    *biggest = big;
}

/* splitmix64: the randomised orders' noise, seeded by the try number (deterministic plans) */
static double
unit_noise(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* A finer price of an order, for near ties: each step's table times (factors + 1), which is
   what product_sum's loops cost; the adjacency simulation sees the tables but not how many
   factors each step multiplies. Factors are bitsets over local variables (fac0: nf0 rows). */
static double
price_by_factors(const word *fac0, int nf0, word *fac, int *live, int W, const int *order,
                 int ne, const int *lcard, word *u, double stop)
{
    memcpy(fac, fac0, sizeof(word) * (size_t)nf0 * W);
    int nl = nf0, nfac = nf0;
    for (int f = 0; f < nf0; f++)
        live[f] = f;
    double cost = 0;
    for (int s = 0; s < ne; s++) {
        int x = order[s], g = 0;
        if ((s & 15) == 15 && past(stop))
            return -1; /* late */
        memset(u, 0, sizeof(word) * (size_t)W);
        for (int i = 0; i < nl;) {
            const word *row = fac + (size_t)live[i] * W;
            if (BIT(row, x)) {
                for (int b = 0; b < W; b++)
                    u[b] |= row[b];
                live[i] = live[--nl]; /* drop from the live list */
                g++;
            }
            else
                i++;
        }
        double size = 1;
        for (int b = 0; b < W; b++)
            for (word bits = u[b]; bits; bits &= bits - 1)
                size *= lcard[b * 64 + ctz64(bits)];
        cost += size * (g + 1);
        CLRBIT(u, x);
        memcpy(fac + (size_t)nfac * W, u, sizeof(word) * (size_t)W);
        live[nl++] = nfac++;
    }
    return cost;
}

/* How many passes over the outer axes a product runs between two looks at the clock. */
#define CLOCK_EVERY 1024

/* One step of the odometer over the output axes [lo, hi) (the last the fastest): advance the
   index idx and the offsets off[f] of the g factors (strides st[f * r + j]) to the next cell.
   The row and block products run it over their outer axes, the block's offset lists over the
   block's axes (one factor: st then points at its strides). */
static inline void
odometer_step(int lo, int hi, int g, int r, const int *outv, const int *lcard,
              const Py_ssize_t *st, int *idx, Py_ssize_t *off)
{
    for (int j = hi - 1; j >= lo; j--) {
        int c = lcard[outv[j]];
        if (++idx[j] < c) {
            for (int f = 0; f < g; f++)
                off[f] += st[(size_t)f * r + j];
            return;
        }
        idx[j] = 0;
        for (int f = 0; f < g; f++)
            off[f] -= st[(size_t)f * r + j] * (c - 1);
    }
}

/* product_block's split of the factors: those that vary over the block (the output axes from
   first_block, or x) into vary, the others into konst; returns how many vary. */
static int
split_by_block(int g, int r, int first_block, const Py_ssize_t *st, const Py_ssize_t *sx,
               int *vary, int *konst)
{
    int nvary = 0, nkonst = 0;
    for (int f = 0; f < g; f++) {
        int varies = sx[f] != 0;
        for (int j = first_block; j < r && !varies; j++)
            varies = st[(size_t)f * r + j] != 0;
        if (varies)
            vary[nvary++] = f;
        else
            konst[nkonst++] = f;
    }
    return nvary;
}

/* The offsets in factor f of the block's b x cx cells (C order over the block axes, then x). */
static void
block_offsets(int f, int r, int first_block, const int *outv, const int *lcard,
              const Py_ssize_t *st, const Py_ssize_t *sx, Py_ssize_t b, int cx, int *idx,
              Py_ssize_t *o)
{
    Py_ssize_t at = 0;
    for (int j = first_block; j < r; j++)
        idx[j] = 0;
    for (Py_ssize_t t = 0; t < b; t++) {
        for (int xv = 0; xv < cx; xv++)
            o[t * cx + xv] = at + xv * sx[f];
        odometer_step(first_block, r, 1, r, outv, lcard, st + (size_t)f * r, idx, &at);
    }
}

/* One pass of product_block: the e cells of the block at the factors' offsets off into p, the
   constant factors first (as a scalar), then the varying ones through their offset lists. */
static inline void
block_pass(Work **fs, const Py_ssize_t *off, const int *vary, int nvary, const int *konst,
           int nkonst, const Py_ssize_t *offs, Py_ssize_t e, double *p)
{
    double scalar = 1.0;
    for (int k = 0; k < nkonst; k++) {
        double a = fs[konst[k]]->data[off[konst[k]]];
        scalar = k ? scalar * a : a;
    }
    if (nvary == 0)
        for (Py_ssize_t t = 0; t < e; t++)
            p[t] = scalar;
    for (int v = 0; v < nvary; v++) {
        const double *a = fs[vary[v]]->data + off[vary[v]];
        const Py_ssize_t *ov = offs + (size_t)v * (size_t)e;
        if (v == 0 && nkonst == 0)
            for (Py_ssize_t t = 0; t < e; t++)
                p[t] = a[ov[t]];
        else if (v == 0)
            for (Py_ssize_t t = 0; t < e; t++)
                p[t] = scalar * a[ov[t]];
        else
            for (Py_ssize_t t = 0; t < e; t++)
                p[t] *= a[ov[t]];
    }
}

/* dst[t] = the sum of the cx cells t * cx ... t * cx + cx - 1, for the n rows t. */
static inline void
sum_rows(const double *cells, Py_ssize_t n, int cx, double *dst)
{
    for (Py_ssize_t t = 0; t < n; t++) {
        double acc = 0.0;
        for (int xv = 0; xv < cx; xv++)
            acc += cells[t * cx + xv];
        dst[t] = acc;
    }
}

/* product_sum's block path: the last `nb` output axes and x form a block of `e` cells whose
   offsets in each factor that varies over it are listed once (`offs`), so that each pass over
   the remaining (outer) axes is one gather loop per factor, however small each axis is; the
   factors constant over the block are multiplied once per pass into a scalar. The products are
   formed in the same factor order as product_sum's other paths (the constant factors first),
   each cell being the same number of roundings. Returns -1 when out of memory, -2 when the
   deadline `stop` passed (out partly written, not to be used). */
static int
product_block(int g, Work **fs, int r, int nb, const int *outv, int x, const int *lcard,
              double *out, const Py_ssize_t *st, const Py_ssize_t *sx, Py_ssize_t *off,
              int *idx, double stop)
{
    int cx = x >= 0 ? lcard[x] : 1, first_block = r - nb;
    Py_ssize_t b = 1, outer = 1;
    for (int j = first_block; j < r; j++)
        b *= lcard[outv[j]];
    for (int j = 0; j < first_block; j++)
        outer *= lcard[outv[j]];
    Py_ssize_t e = b * cx;
    int *vary = malloc(sizeof(int) * (size_t)g), *konst = malloc(sizeof(int) * (size_t)g);
    Py_ssize_t *offs = malloc(sizeof(Py_ssize_t) * (size_t)e * (size_t)(g > 0 ? g : 1));
    double *cells = cx > 1 ? malloc(sizeof(double) * (size_t)e) : NULL;
    if (!vary || !konst || !offs || (cx > 1 && !cells)) {
        free(vary);
        free(konst);
        free(offs);
        free(cells);
        return -1;
    }
    int nvary = split_by_block(g, r, first_block, st, sx, vary, konst), nkonst = g - nvary;
    for (int v = 0; v < nvary; v++)
        block_offsets(vary[v], r, first_block, outv, lcard, st, sx, b, cx, idx,
                      offs + (size_t)v * (size_t)e);
    for (int j = 0; j < first_block; j++)
        idx[j] = 0;
    for (int f = 0; f < g; f++)
        off[f] = 0;
    int late = 0;
    for (Py_ssize_t o = 0; o < outer; o++) {
        if ((o & (CLOCK_EVERY - 1)) == CLOCK_EVERY - 1 && past(stop)) {
            late = 1;
            break;
        }
        double *dst = out + o * b;
        block_pass(fs, off, vary, nvary, konst, nkonst, offs, e, cx > 1 ? cells : dst);
        if (cx > 1)
            sum_rows(cells, b, cx, dst);
        odometer_step(0, first_block, g, r, outv, lcard, st, idx, off);
    }
    free(vary);
    free(konst);
    free(offs);
    free(cells);
    return late ? -2 : 0;
}

/* The strides of every output variable (st[f * r + j]) and of x (sx[f]) in every factor, 0
   where absent; every offset off[f] set to 0. */
static void
product_strides(int g, Work **fs, int r, const int *outv, int x, const int *lcard,
                Py_ssize_t *st, Py_ssize_t *sx, Py_ssize_t *off)
{
    for (int f = 0; f < g; f++) {
        Work *w = fs[f];
        for (int j = 0; j < r; j++)
            st[(size_t)f * r + j] = 0;
        sx[f] = 0;
        Py_ssize_t s = 1;
        for (int a = w->nv - 1; a >= 0; a--) {
            int v = w->vars[a];
            if (v == x)
                sx[f] = s;
            else
                for (int j = 0; j < r; j++)
                    if (outv[j] == v) {
                        st[(size_t)f * r + j] = s;
                        break;
                    }
            s *= lcard[v];
        }
        off[f] = 0;
    }
}

/* How many trailing output axes product_sum's block path takes (BLOCK_FROM, BLOCK_CELLS); 1 or
   less: the row path runs. */
static int
block_axes(int r, const int *outv, const int *lcard, int cx)
{
    Py_ssize_t inner = r > 0 ? lcard[outv[r - 1]] : 1;
    if (r < 2 || inner * cx >= BLOCK_FROM)
        return 0;
    int nb = 1;
    Py_ssize_t cells = inner * cx;
    while (nb < r && cells * lcard[outv[r - 1 - nb]] <= BLOCK_CELLS)
        cells *= lcard[outv[r - 1 - nb++]];
    return nb;
}

/* One row of product_sum (the last output axis, `inner` cells, strides sa, sx: xa) for one
   factor a, and for two factors a and b. */
static inline void
row_of_one(const double *a, Py_ssize_t sa, Py_ssize_t xa, Py_ssize_t inner, int cx,
           double *dst)
{
    for (Py_ssize_t t = 0; t < inner; t++, a += sa) {
        double acc = 0.0;
        for (int xv = 0; xv < cx; xv++)
            acc += a[xv * xa];
        dst[t] = acc;
    }
}

static inline void
row_of_two(const double *a, const double *b, Py_ssize_t sa, Py_ssize_t sb, Py_ssize_t xa,
           Py_ssize_t xb, Py_ssize_t inner, int cx, double *dst)
{
    for (Py_ssize_t t = 0; t < inner; t++, a += sa, b += sb) {
        double acc = 0.0;
        for (int xv = 0; xv < cx; xv++)
            acc += a[xv * xa] * b[xv * xb];
        dst[t] = acc;
    }
}

/* One row of product_sum for three or more factors: the block of inner x cx products, one
   factor at a time, into tmp ((inner + 1) x cx entries), then the sums; factors that do not
   depend on the inner axis are multiplied once, into the first row of the block (base), which
   then seeds the others. */
static inline void
row_of_many(int g, Work **fs, const Py_ssize_t *off, const Py_ssize_t *st,
            const Py_ssize_t *sx, int r, Py_ssize_t inner, int cx, double *tmp, double *dst)
{
    int last = r - 1;
    double *base = tmp + inner * cx;
    int seeded = 0;
    for (int f = 0; f < g; f++) {
        Py_ssize_t sa = r > 0 ? st[(size_t)f * r + last] : 0, xa = sx[f];
        if (sa)
            continue;
        const double *a = fs[f]->data + off[f];
        for (int xv = 0; xv < cx; xv++)
            base[xv] = seeded ? base[xv] * a[xv * xa] : a[xv * xa];
        seeded = 1;
    }
    int first = 1;
    for (int f = 0; f < g; f++) {
        const double *a = fs[f]->data + off[f];
        Py_ssize_t sa = r > 0 ? st[(size_t)f * r + last] : 0, xa = sx[f];
        if (!sa)
            continue;
        double *p = tmp;
        if (first && seeded)
            for (Py_ssize_t t = 0; t < inner; t++, a += sa)
                for (int xv = 0; xv < cx; xv++, p++)
                    *p = base[xv] * a[xv * xa];
        else if (first)
            for (Py_ssize_t t = 0; t < inner; t++, a += sa)
                for (int xv = 0; xv < cx; xv++, p++)
                    *p = a[xv * xa];
        else
            for (Py_ssize_t t = 0; t < inner; t++, a += sa)
                for (int xv = 0; xv < cx; xv++, p++)
                    *p *= a[xv * xa];
        first = 0;
    }
    if (first) /* no factor depends on the inner axis */
        for (Py_ssize_t t = 0; t < inner; t++)
            for (int xv = 0; xv < cx; xv++)
                tmp[t * cx + xv] = seeded ? base[xv] : 1.0;
    sum_rows(tmp, inner, cx, dst);
}

/* out[cell] = sum over x of the product of the factors, cells in C order over outv.
   x < 0: no summed variable (a plain product). The last output axis runs as a plain loop
   (one pointer step per factor), the others as an odometer; one and two factors, the
   common cases, have loops of their own; more go through `tmp` ((inner + 1) x card x entries).
   Where the last axis (times x) is shorter than BLOCK_FROM cells, the per-pass overhead of
   that loop would dominate: product_block takes trailing axes up to BLOCK_CELLS cells instead.
   Returns -1 when out of memory, -2 when the deadline `stop` passed (out partly written, not
   to be used): one step of a large query can take minutes, so the clock is read every
   CLOCK_EVERY passes over the outer axes, not only between steps. */
static int
product_sum(int g, Work **fs, int r, const int *outv, int x, const int *lcard, double *out,
            Py_ssize_t *st, Py_ssize_t *sx, Py_ssize_t *off, int *idx, double *tmp,
            double stop)
{
    product_strides(g, fs, r, outv, x, lcard, st, sx, off);
    int cx = x >= 0 ? lcard[x] : 1;
    int last = r - 1;
    Py_ssize_t inner = r > 0 ? lcard[outv[last]] : 1, outer = 1;
    int nb = block_axes(r, outv, lcard, cx);
    if (nb > 1)
        return product_block(g, fs, r, nb, outv, x, lcard, out, st, sx, off, idx, stop);
    for (int j = 0; j < last; j++) {
        outer *= lcard[outv[j]];
        idx[j] = 0;
    }
    for (Py_ssize_t o = 0; o < outer; o++) {
        if ((o & (CLOCK_EVERY - 1)) == CLOCK_EVERY - 1 && past(stop))
            return -2;
        double *dst = out + o * inner;
        if (g == 1)
            row_of_one(fs[0]->data + off[0], r > 0 ? st[last] : 0, sx[0], inner, cx, dst);
        else if (g == 2)
            row_of_two(fs[0]->data + off[0], fs[1]->data + off[1], r > 0 ? st[last] : 0,
                       r > 0 ? st[(size_t)r + last] : 0, sx[0], sx[1], inner, cx, dst);
        else
            row_of_many(g, fs, off, st, sx, r, inner, cx, tmp, dst);
        odometer_step(0, last, g, r, outv, lcard, st, idx, off);
    }
    return 0;
}

/* qsort context: intermediate tables put their largest variable last (the plain inner loop
   of product_sum), ties by local id */
static const int *sort_card;
static int
cmp_card(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    int cx = sort_card[x], cy = sort_card[y];
    if (cx != cy)
        return (cx > cy) - (cx < cy);
    return (x > y) - (x < y);
}

/* qsort context for the given order (positions of local variables) */
static const int *sort_pos;
static int
cmp_pos(const void *a, const void *b)
{
    int x = sort_pos[*(const int *)a], y = sort_pos[*(const int *)b];
    return (x > y) - (x < y);
}

/* A scratch buffer of `item`-byte entries grown on demand to `need` entries. */
static int
grow(void **buf, size_t *cap, size_t need, size_t item)
{
    if (need <= *cap)
        return 0;
    void *p = realloc(*buf, item * need);
    if (p == NULL)
        return -1;
    *buf = p;
    *cap = need;
    return 0;
}

/* ---- one query's joint: the state of compute_joint and its steps ------------------------- */

/* Everything one call of compute_joint allocates (freed by query_free), by step. */
typedef struct {
    /* 1. the ancestral set: per node a mark (bit 1 queried, bit 2 reached by the walk) and a
       local id (-1 none); per local variable its node, cardinality, position in the given
       order; the chosen factors; the variables to eliminate */
    int n, k, nf, ne, total_vars;
    int *mark, *local, *glob, *stack, *lcard, *lpos, *elim;
    Fac **chosen;
    char *flag;
    /* 2. the factor graph over local variables (W words a row), the orders priced (ord[3]:
       the one being priced, the best, the second best) */
    int W;
    word *adj0, *adj, *saved;
    int *ord[3], *cur, *best_order, *second_order;
    double *noise, *wt;
    double best_cost, second_cost;
    int have, have_second;
    word *fac0, *fac;
    int *live;
    /* 3. the numeric elimination: the factors (the chosen ones, then one per step) */
    int cap, nwork;
    Work *work, **sel;
    Inc inc;
    int *outv, *idx, *lv;
    Py_ssize_t *st, *sx, *off;
    size_t st_cap, tmp_cap;
    double *tmp;
} Query;

/* -1 with MemoryError set. */
static int
no_memory(void)
{
    PyErr_NoMemory();
    return -1;
}

static void
query_free(Query *Q)
{
    if (Q->work)
        for (int f = Q->nf; f < Q->cap; f++) { /* the original factors' memory is not ours */
            free(Q->work[f].owned);
            free(Q->work[f].vars);
        }
    free(Q->work);
    free(Q->sel);
    free(Q->outv);
    free(Q->inc.head);
    free(Q->inc.next);
    free(Q->inc.fid);
    free(Q->st);
    free(Q->tmp);
    free(Q->sx);
    free(Q->off);
    free(Q->idx);
    free(Q->lv);
    free(Q->mark);
    free(Q->local);
    free(Q->glob);
    free(Q->lcard);
    free(Q->stack);
    free(Q->chosen);
    free(Q->flag);
    free(Q->elim);
    for (int c = 0; c < 3; c++)
        free(Q->ord[c]);
    free(Q->noise);
    free(Q->fac0);
    free(Q->fac);
    free(Q->live);
    free(Q->lpos);
    free(Q->wt);
    free(Q->adj0);
    free(Q->adj);
    free(Q->saved);
}

/* Node v's factor for this query: its folded CPD when it has one and none of the private
   ancestors summed into it is queried, else its own CPD. */
static Fac *
factor_of(const Network *self, const int *mark, int v)
{
    Fac *fo = &self->folded[v];
    if (!fo->present)
        return &self->base[v];
    for (int i = 0; i < fo->npriv; i++)
        if (mark[fo->priv[i]] & 1)
            return &self->base[v];
    return fo;
}

/* Step 1: the ancestral set of q, walked upwards from the query nodes, each node's factor
   (factor_of) chosen and its variables given local ids. 0, or -1 with an exception set. */
static int
ancestral_set(Network *self, const int *q, int m, Query *Q)
{
    int n = self->n, sp = 0;
    Q->mark = calloc((size_t)n, sizeof(int));
    Q->local = malloc(sizeof(int) * (size_t)n);
    Q->glob = malloc(sizeof(int) * (size_t)n);
    Q->stack = malloc(sizeof(int) * (size_t)n);
    Q->chosen = malloc(sizeof(Fac *) * (size_t)n);
    if (!Q->mark || !Q->local || !Q->glob || !Q->stack || !Q->chosen)
        return no_memory();
    for (int i = 0; i < m; i++) {
        Q->mark[q[i]] = 3;
        Q->stack[sp++] = q[i];
    }
    for (int i = 0; i < n; i++)
        Q->local[i] = -1;
    while (sp) {
        Fac *f = factor_of(self, Q->mark, Q->stack[--sp]);
        Q->chosen[Q->nf++] = f;
        Q->total_vars += f->nv;
        for (int i = 0; i < f->nups; i++) {
            int u = f->ups[i];
            if (!(Q->mark[u] & 2)) {
                Q->mark[u] |= 2;
                Q->stack[sp++] = u;
            }
        }
        for (int i = 0; i < f->nv; i++) {
            int u = f->vars[i];
            if (Q->local[u] < 0) {
                Q->local[u] = Q->k;
                Q->glob[Q->k++] = u;
            }
        }
    }
    for (int i = 0; i < m; i++)
        if (Q->local[q[i]] < 0) { /* cannot happen: a node's own table holds it */
            PyErr_SetString(PyExc_RuntimeError, "a query node is in no factor");
            return -1;
        }
    return 0;
}

/* The local variables' cardinalities and positions, the ones to eliminate, the scratch of
   the pricing, and the factor graph (adj0: variables sharing a factor). 0, or -1 (no memory). */
static int
factor_graph(const Network *self, Query *Q)
{
    int k = Q->k;
    Q->lcard = malloc(sizeof(int) * (size_t)k);
    Q->flag = calloc((size_t)k, 1);
    Q->elim = malloc(sizeof(int) * (size_t)k);
    for (int c = 0; c < 3; c++)
        Q->ord[c] = malloc(sizeof(int) * (size_t)k);
    Q->noise = malloc(sizeof(double) * (size_t)k);
    Q->cur = Q->ord[0];
    Q->best_order = Q->ord[1];
    Q->second_order = Q->ord[2];
    Q->lpos = malloc(sizeof(int) * (size_t)k);
    Q->wt = malloc(sizeof(double) * (size_t)k);
    if (!Q->lcard || !Q->flag || !Q->elim || !Q->ord[0] || !Q->ord[1] || !Q->ord[2] ||
        !Q->noise || !Q->lpos || !Q->wt)
        return no_memory();
    for (int i = 0; i < k; i++) {
        Q->lcard[i] = self->card[Q->glob[i]];
        Q->lpos[i] = self->pos[Q->glob[i]];
        if (!(Q->mark[Q->glob[i]] & 1))
            Q->elim[Q->ne++] = i;
    }
    int W = Q->W = (k + 63) / 64;
    Q->adj0 = calloc((size_t)k * (size_t)W, sizeof(word));
    Q->adj = calloc((size_t)k * (size_t)W, sizeof(word));
    Q->saved = calloc((size_t)W * 2, sizeof(word));
    if (!Q->adj0 || !Q->adj || !Q->saved)
        return no_memory();
    for (int f = 0; f < Q->nf; f++) {
        const Fac *fa = Q->chosen[f];
        for (int a = 0; a < fa->nv; a++)
            for (int b = 0; b < fa->nv; b++)
                if (a != b)
                    SETBIT(Q->adj0 + (size_t)Q->local[fa->vars[a]] * W, Q->local[fa->vars[b]]);
    }
    return 0;
}

/* How many orders of candidate c (1 the given order, 2 greedy min-weight, 3 min-fill, 4
   randomised min-weight and min-fill) to price. Mode 0 keeps the cheapest whose largest table
   fits (the first of equal ones). Pricing costs more than small eliminations save, so mode 0
   prices 3 only once the others cost FILL_FROM, and 4 only once they cost RANDOM_FROM.
   Pricing a greedy order takes about ne * ne / 4 steps (each step scans the variables left)
   plus the bitset updates; an order can save at most the best cost found, so on a large
   ancestral set whose best order is already cheap (long chains, layered networks: hundreds of
   variables, small tables) mode 0 prices no further order (PRICE_RATIO). Without an order
   that fits, every candidate is priced. */
static int
tries_of(const Query *Q, int mode, int c)
{
    double pricing = (double)Q->ne * (double)Q->ne / 4.0 + (double)Q->ne * (double)Q->W * 8.0;
    if (mode)
        return mode != c ? 0 : c == 4 ? TRIES : 1;
    if (c == 3 && Q->have && Q->best_cost < FILL_FROM)
        return 0;
    if (c >= 2 && Q->have && Q->best_cost < PRICE_RATIO * pricing * (c == 4 ? TRIES : 1))
        return 0;
    if (c < 4)
        return 1;
    return Q->have && Q->best_cost >= RANDOM_FROM ? TRIES : (Q->have ? 0 : HARD_TRIES);
}

/* Price try t of candidate c into Q->cur: its cost and largest table; sets *late when the
   deadline passed. */
static void
price_candidate(Query *Q, int c, int t, double max_table, double stop, double *cost,
                double *big, int *late)
{
    if (c == 1) {
        memcpy(Q->cur, Q->elim, sizeof(int) * (size_t)Q->ne);
        sort_pos = Q->lpos;
        qsort(Q->cur, (size_t)Q->ne, sizeof(int), cmp_pos);
        sort_pos = NULL;
        simulate(Q->adj0, Q->adj, Q->k, Q->W, Q->cur, Q->ne, Q->lcard, max_table, stop, cost,
                 big, late);
        return;
    }
    const double *noise = NULL;
    int kind = c == 2 ? BY_WEIGHT : BY_FILL;
    if (c == 4) {
        uint64_t state = 0x5EED0000ull + (uint64_t)t;
        for (int i = 0; i < Q->k; i++)
            Q->noise[i] = unit_noise(&state);
        noise = Q->noise;
        kind = t % 2 ? BY_FILL : BY_WEIGHT;
    }
    greedy(Q->adj0, Q->adj, Q->k, Q->W, Q->elim, Q->ne, Q->lcard, Q->glob, kind, noise, Q->cur,
           Q->wt, Q->flag, Q->saved, max_table, stop, cost, big, late);
}

/* Rank the order just priced (Q->cur, of the given cost) among the best two kept. */
static void
keep_candidate(Query *Q, double cost)
{
    if (!Q->have || cost < Q->best_cost) { /* cur becomes the best, the best the second */
        int *swap = Q->second_order;
        Q->second_order = Q->best_order;
        Q->best_order = Q->cur;
        Q->cur = swap;
        Q->second_cost = Q->best_cost;
        Q->have_second = Q->have;
        Q->best_cost = cost;
        Q->have = 1;
    }
    else if (!Q->have_second || cost < Q->second_cost) {
        int *swap = Q->second_order;
        Q->second_order = Q->cur;
        Q->cur = swap;
        Q->second_cost = cost;
        Q->have_second = 1;
    }
}

/* Step 2: price the candidate orders (tries_of), keeping the best two that fit max_table
   (Q->have, Q->have_second). 0, or -2 when the deadline passed. */
static int
price_orders(Query *Q, int mode, double max_table, double stop)
{
    for (int c = 1; c <= 4; c++) {
        int tries = tries_of(Q, mode, c);
        for (int t = 0; t < tries; t++) {
            double cost = 0, big = 0;
            int late = past(stop);
            if (!late)
                price_candidate(Q, c, t, max_table, stop, &cost, &big, &late);
            if (late)
                return -2;
            if (big <= max_table)
                keep_candidate(Q, cost);
        }
    }
    return 0;
}

/* The order to run: the best, or at a near tie in mode 0 (the second within NEAR_TIE of the
   best by tables) the one of the two that price_by_factors finds cheaper. 0, -1 (no memory)
   or -2 (late). */
static int
choose_order(Query *Q, int mode, double stop, const int **order)
{
    *order = Q->best_order;
    if (mode || !Q->have_second || Q->second_cost > NEAR_TIE * Q->best_cost)
        return 0;
    int nf = Q->nf, ne = Q->ne, W = Q->W;
    Q->fac0 = calloc((size_t)(nf + ne) * (size_t)W, sizeof(word));
    Q->fac = calloc((size_t)(nf + ne) * (size_t)W, sizeof(word));
    Q->live = malloc(sizeof(int) * (size_t)(nf + ne));
    if (!Q->fac0 || !Q->fac || !Q->live)
        return no_memory();
    for (int f = 0; f < nf; f++)
        for (int a = 0; a < Q->chosen[f]->nv; a++)
            SETBIT(Q->fac0 + (size_t)f * W, Q->local[Q->chosen[f]->vars[a]]);
    double by_second = price_by_factors(Q->fac0, nf, Q->fac, Q->live, W, Q->second_order, ne,
                                        Q->lcard, Q->saved, stop);
    double by_best = by_second < 0 ? -1 : price_by_factors(Q->fac0, nf, Q->fac, Q->live, W,
                                                           Q->best_order, ne, Q->lcard,
                                                           Q->saved, stop);
    if (by_best < 0)
        return -2;
    if (by_second < by_best)
        *order = Q->second_order;
    return 0;
}

/* Step 3's set-up: the chosen factors as live Work entries over local variables, indexed by
   variable (Q->inc), and the scratch of the products. 0, or -1 (no memory). */
static int
start_elimination(Query *Q)
{
    int k = Q->k, cap = Q->cap = Q->nf + Q->ne;
    Q->work = calloc((size_t)cap, sizeof(Work));
    Q->sel = malloc(sizeof(Work *) * (size_t)cap);
    Q->outv = malloc(sizeof(int) * (size_t)(k + 1));
    Q->inc.head = malloc(sizeof(int) * (size_t)k);
    Q->sx = malloc(sizeof(Py_ssize_t) * (size_t)cap);
    Q->off = malloc(sizeof(Py_ssize_t) * (size_t)cap);
    Q->idx = malloc(sizeof(int) * (size_t)(k + 1));
    Q->lv = malloc(sizeof(int) * (size_t)(Q->total_vars > 0 ? Q->total_vars : 1));
    if (!Q->work || !Q->sel || !Q->outv || !Q->inc.head || !Q->sx || !Q->off || !Q->idx ||
        !Q->lv)
        return no_memory();
    for (int i = 0; i < k; i++)
        Q->inc.head[i] = -1;
    for (int f = 0, used = 0; f < Q->nf; f++) {
        const Fac *fa = Q->chosen[f];
        Work *w = &Q->work[f];
        w->nv = fa->nv;
        w->vars = Q->lv + used;
        for (int a = 0; a < fa->nv; a++) {
            w->vars[a] = Q->local[fa->vars[a]];
            if (inc_add(&Q->inc, w->vars[a], f) < 0)
                return no_memory();
        }
        used += fa->nv;
        w->data = fa->data;
        w->alive = 1;
    }
    Q->nwork = Q->nf;
    memset(Q->flag, 0, (size_t)k); /* now: variable already in this step's output */
    return 0;
}

/* The live factors holding x into Q->sel (returns how many) and the other variables they hold
   into Q->outv (*r of them), largest cardinality last. */
static int
gather_step(Query *Q, int x, int *r)
{
    int g = 0;
    *r = 0;
    for (int e = Q->inc.head[x]; e >= 0; e = Q->inc.next[e]) {
        Work *w = &Q->work[Q->inc.fid[e]];
        if (!w->alive)
            continue;
        Q->sel[g++] = w;
        for (int a = 0; a < w->nv; a++) {
            int u = w->vars[a];
            if (u != x && !Q->flag[u]) {
                Q->flag[u] = 1;
                Q->outv[(*r)++] = u;
            }
        }
    }
    sort_card = Q->lcard;
    qsort(Q->outv, (size_t)*r, sizeof(int), cmp_card);
    for (int j = 0; j < *r; j++)
        Q->flag[Q->outv[j]] = 0;
    return g;
}

/* Room for product_sum's strides (g factors, r axes) and, for three factors or more, its
   block of (last axis + 1) x cx products. 0, or -1 (no memory). */
static int
product_room(Query *Q, int g, int r, int cx)
{
    size_t block = (size_t)((r ? Q->lcard[Q->outv[r - 1]] : 1) + 1) * (size_t)cx;
    if (grow((void **)&Q->st, &Q->st_cap, (size_t)g * (size_t)r + 1, sizeof(Py_ssize_t)) < 0 ||
        (g > 2 && grow((void **)&Q->tmp, &Q->tmp_cap, block, sizeof(double)) < 0))
        return no_memory();
    return 0;
}

/* One step of the numeric elimination: multiply the live factors holding x, sum x out, into a
   new factor; the consumed ones die (intermediate tables freed at once). 0, -1 (no memory) or
   -2 (late). */
static int
eliminate_step(Query *Q, int x, double stop)
{
    int r, g = gather_step(Q, x, &r);
    Py_ssize_t size = 1;
    for (int j = 0; j < r; j++)
        size *= Q->lcard[Q->outv[j]];
    Work *nw = &Q->work[Q->nwork++];
    nw->vars = malloc(sizeof(int) * (size_t)(r > 0 ? r : 1));
    nw->owned = malloc(sizeof(double) * (size_t)size);
    if (!nw->vars || !nw->owned)
        return no_memory();
    if (product_room(Q, g, r, Q->lcard[x]) < 0)
        return -1;
    memcpy(nw->vars, Q->outv, sizeof(int) * (size_t)r);
    nw->nv = r;
    int made = product_sum(g, Q->sel, r, Q->outv, x, Q->lcard, nw->owned, Q->st, Q->sx, Q->off,
                           Q->idx, Q->tmp, stop);
    if (made == -2)
        return -2;
    if (made < 0)
        return no_memory();
    nw->data = nw->owned;
    nw->alive = 1;
    for (int f = 0; f < g; f++) {
        Work *w = Q->sel[f];
        w->alive = 0;
        free(w->owned);
        w->owned = NULL;
        w->data = NULL;
    }
    for (int j = 0; j < r; j++)
        if (inc_add(&Q->inc, Q->outv[j], (int)(nw - Q->work)) < 0)
            return no_memory();
    return 0;
}

/* The product of the factors left, onto the query's axes in the order given, into out. 0, -1
   (no memory) or -2 (late). */
static int
final_product(Query *Q, const int *q, int m, double *out, double stop)
{
    int g = 0;
    for (int f = 0; f < Q->nwork; f++)
        if (Q->work[f].alive)
            Q->sel[g++] = &Q->work[f];
    for (int i = 0; i < m; i++)
        Q->outv[i] = Q->local[q[i]];
    if (product_room(Q, g, m, 1) < 0)
        return -1;
    int made = product_sum(g, Q->sel, m, Q->outv, -1, Q->lcard, out, Q->st, Q->sx, Q->off,
                           Q->idx, Q->tmp, stop);
    if (made == -2)
        return -2;
    return made < 0 ? no_memory() : 0;
}

/* Step 3: eliminate the variables in `order`, then the final product into out. 0, -1 (with
   an exception set) or -2 (late). */
static int
eliminate(Query *Q, const int *order, const int *q, int m, double *out, double stop)
{
    int rc = start_elimination(Q);
    for (int s = 0; s < Q->ne && rc == 0; s++)
        rc = past(stop) ? -2 : eliminate_step(Q, order[s], stop);
    return rc ? rc : final_product(Q, q, m, out, stop);
}

/* P(q) into out (C order, axes in the order of q). Returns 1 when computed, 0 when the output
   or every order considered would build a table above max_table (out untouched), -1 with an
   exception set, -2 when the deadline `stop` passed (out not to be used). With out NULL
   nothing is computed (pricing only): 1 when an order fits, with its cost (the entries of the
   tables it builds) in *cost.
   q: m distinct node indices in range (checked by the callers). */
static int
compute_joint(Network *self, const int *q, int m, double *out, double max_table, int mode,
              double *cost, double stop)
{
    double out_size = 1;
    for (int i = 0; i < m; i++)
        out_size *= self->card[q[i]];
    if (out_size > max_table) /* the output is a table too */
        return 0;
    Query Q = {0};
    const int *order = NULL;
    int rc = ancestral_set(self, q, m, &Q);
    if (rc == 0)
        rc = factor_graph(self, &Q);
    if (rc == 0)
        rc = price_orders(&Q, mode, max_table, stop);
    if (rc == 0 && Q.have && out == NULL) /* pricing only */
        *cost = Q.best_cost;
    else if (rc == 0 && Q.have) {
        rc = choose_order(&Q, mode, stop, &order);
        if (rc == 0)
            rc = eliminate(&Q, order, q, m, out, stop);
    }
    query_free(&Q);
    return rc == 0 ? Q.have : rc; /* 0: no order fits */
}

/* Whether this thread's floating-point environment keeps subnormal numbers: neither
   flush-to-zero nor denormals-are-zero (which a library built with -ffast-math may switch on
   for the whole process). Under denormals-are-zero a subnormal operand counts as zero without
   raising the underflow flag, so the flag is a complete check only when this holds. */
static int
keeps_subnormals(void)
{
    volatile double least_normal = DBL_MIN, half = 0.5, two = 2.0;
    volatile double sub = least_normal * half; /* exact: 2**-1023 */
    volatile double back = sub * two;
    return sub != 0.0 && back == DBL_MIN;
}

/* Clear the underflow flag before a computation; see underflowed(). */
static void
start_underflow_watch(void)
{
    feclearexcept(FE_UNDERFLOW);
}

/* Whether an operation since start_underflow_watch() underflowed (or might have, unseen). */
static int
underflowed(void)
{
    return fetestexcept(FE_UNDERFLOW) != 0 || !keeps_subnormals();
}

static int
parse_nodes(Network *self, PyObject *nodes_obj, int mode, int **q, int *m, Py_ssize_t *osize)
{
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Network is not initialised");
        return -1;
    }
    if (mode < 0 || mode > 4) {
        PyErr_SetString(PyExc_ValueError, "mode must be 0 (cheapest), 1 (given order), "
                                          "2 (min-weight), 3 (min-fill) or 4 (randomised)");
        return -1;
    }
    if (int_seq(nodes_obj, self->n, q, m, "nodes") < 0)
        return -1;
    if (*m == 0) {
        PyErr_SetString(PyExc_ValueError, "nodes must not be empty");
        PyMem_Free(*q);
        return -1;
    }
    *osize = 1;
    for (int i = 0; i < *m; i++) {
        for (int j = 0; j < i; j++)
            if ((*q)[j] == (*q)[i]) {
                PyErr_SetString(PyExc_ValueError, "nodes must be distinct");
                PyMem_Free(*q);
                return -1;
            }
        *osize *= self->card[(*q)[i]];
    }
    return 0;
}

/* The deadline of a call's optional budget argument (seconds; negative: none); -1 with an
   exception set for NaN. */
static int
parse_budget(double budget, double *stop)
{
    if (isnan(budget)) {
        PyErr_SetString(PyExc_ValueError, "budget must be a number of seconds (< 0: none)");
        return -1;
    }
    *stop = stop_of(budget);
    return 0;
}

static PyObject *
Network_joint(Network *self, PyObject *args)
{
    PyObject *nodes_obj, *out_obj;
    double max_table, budget = -1, stop;
    int mode = 0, m = 0, *q = NULL;
    Py_ssize_t osize;
    if (!PyArg_ParseTuple(args, "OOd|id", &nodes_obj, &out_obj, &max_table, &mode, &budget))
        return NULL;
    if (parse_budget(budget, &stop) < 0)
        return NULL;
    if (parse_nodes(self, nodes_obj, mode, &q, &m, &osize) < 0)
        return NULL;
    Py_buffer obuf;
    if (PyObject_GetBuffer(out_obj, &obuf,
                           PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
        PyMem_Free(q);
        return NULL;
    }
    int rc = -1, underflow = 0;
    if (!is_float64(&obuf) || obuf.len != osize * 8)
        PyErr_SetString(PyExc_ValueError, "out must be a C-contiguous float64 table "
                                          "with one entry per joint state of nodes");
    else {
        start_underflow_watch();
        rc = compute_joint(self, q, m, (double *)obuf.buf, max_table, mode, NULL, stop);
        underflow = underflowed();
    }
    PyMem_Free(q);
    PyBuffer_Release(&obuf);
    if (rc == -2)
        return PyLong_FromLong(LATE);
    if (rc < 0)
        return NULL;
    return PyLong_FromLong(rc == 1 ? (underflow ? 2 : 1) : 0);
}

static PyObject *
Network_price(Network *self, PyObject *args)
{
    PyObject *nodes_obj;
    double max_table, cost = 0, budget = -1, stop;
    int mode = 0, m = 0, *q = NULL;
    Py_ssize_t osize;
    if (!PyArg_ParseTuple(args, "Od|id", &nodes_obj, &max_table, &mode, &budget))
        return NULL;
    if (parse_budget(budget, &stop) < 0)
        return NULL;
    if (parse_nodes(self, nodes_obj, mode, &q, &m, &osize) < 0)
        return NULL;
    int rc = compute_joint(self, q, m, NULL, max_table, mode, &cost, stop);
    PyMem_Free(q);
    if (rc == -2)
        return PyFloat_FromDouble(-1.0);
    if (rc < 0)
        return NULL;
    if (rc == 0)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(cost);
}

static PyObject *Network_influence(Network *self, PyObject *args);

static PyMethodDef Network_methods[] = {
    {"joint", (PyCFunction)Network_joint, METH_VARARGS,
     "joint(nodes, out, max_table, mode=0, budget=-1.0) -> 0, 1, 2 or 3\n\n"
     "Write P(nodes) into out (float64, C order, axes in the order of nodes) and return 1, or\n"
     "2 when some operation underflowed (out is then not to be trusted). 0, with out\n"
     "untouched, when every order considered would build a table above max_table entries.\n"
     "mode: 0 the cheapest of the candidate orders (sum of the tables they build, priced\n"
     "symbolically), 1 the order given at construction, 2 greedy min-weight, 3 greedy min-fill, 4 the\n"
     "cheapest of four randomised greedy orders. budget: seconds the call may take (< 0: no\n"
     "limit); 3 (LATE) when they passed, out then not to be used."},
    {"price", (PyCFunction)Network_price, METH_VARARGS,
     "price(nodes, max_table, mode=0, budget=-1.0) -> float or None\n\n"
     "The order joint() would use, priced symbolically, with no arithmetic: the entries of the\n"
     "tables it builds, or None when no order considered fits max_table; -1.0 when the budget\n"
     "(seconds, as for joint) passed first."},
    {"influence", (PyCFunction)Network_influence, METH_VARARGS,
     "influence(nodes, max_table, mode=0, budget=-1.0) -> (value, a, b, underflow), None or 3\n\n"
     "Definition 8 (see definition8) of P(nodes), nodes[0] the sensitive attribute: the\n"
     "influence of nodes[1:] on it, unrounded, the pair of its states attaining it, and whether\n"
     "some operation underflowed (the value is then not to be trusted). None when the joint\n"
     "cannot be computed within max_table (as joint() returning 0); 3 (LATE) when the budget\n"
     "(seconds, as for joint) passed first."},
    {NULL, NULL, 0, NULL},
};

/* A heap type (PyType_FromSpec), not a static PyTypeObject: the limited API (abi3) has no
 * static types. */
static PyType_Slot Network_slots[] = {
    {Py_tp_doc, (void *)"Network(cards, position, base, folded): one member of Theta, prepared.\n\n"
                        "cards: states per node; position: each node's place in a candidate\n"
                        "elimination order; base: per node (scope, float64 table, parents to walk);\n"
                        "folded: per node None or (private ancestors, scope, table, parents to walk)."},
    {Py_tp_new, (void *)PyType_GenericNew},
    {Py_tp_init, (void *)Network_init},
    {Py_tp_dealloc, (void *)Network_dealloc},
    {Py_tp_methods, (void *)Network_methods},
    {0, NULL},
};

static PyType_Spec Network_spec = {
    .name = "quiltpriv.inference._kernel.Network",
    .basicsize = sizeof(Network),
    .itemsize = 0,
#ifdef Py_TPFLAGS_IMMUTABLETYPE
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
#else
    .flags = Py_TPFLAGS_DEFAULT,
#endif
    .slots = Network_slots,
};

/* ---- Definition 8 on a joint table ------------------------------------------------------ */

/* Each row's total, summed in column order (as sum() does in quiltpriv.influence), four rows
   at a time so that the rows' additions, each row a dependency chain, overlap. */
static void
row_totals(const double *j, Py_ssize_t rows, Py_ssize_t cols, double *total)
{
    Py_ssize_t a = 0;
    for (; a + 4 <= rows; a += 4) {
        const double *r0 = j + a * cols, *r1 = r0 + cols, *r2 = r1 + cols, *r3 = r2 + cols;
        double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0;
        for (Py_ssize_t c = 0; c < cols; c++) {
            t0 += r0[c];
            t1 += r1[c];
            t2 += r2[c];
            t3 += r3[c];
        }
        total[a] = t0;
        total[a + 1] = t1;
        total[a + 2] = t2;
        total[a + 3] = t3;
    }
    if (rows - a >= 2) {
        const double *r0 = j + a * cols, *r1 = r0 + cols;
        double t0 = 0.0, t1 = 0.0;
        for (Py_ssize_t c = 0; c < cols; c++) {
            t0 += r0[c];
            t1 += r1[c];
        }
        total[a] = t0;
        total[a + 1] = t1;
        a += 2;
    }
    if (a < rows) {
        const double *r0 = j + a * cols;
        double t0 = 0.0;
        for (Py_ssize_t c = 0; c < cols; c++)
            t0 += r0[c];
        total[a] = t0;
    }
}

/* definition8_core takes the columns D8_CHUNK at a time: the running maxima and minima of a
   chunk stay in the first-level cache while the rows stream past */
#define D8_CHUNK 512

/* The first rows (of positive total) attaining column c's maximum `h` and minimum `l`: the
   rows max/min_of_chunk would have recorded with strict comparisons, found by computing the
   same quotients again. */
static void
attaining_rows(const double *j, Py_ssize_t rows, Py_ssize_t cols, const double *total,
               Py_ssize_t c, double h, double l, Py_ssize_t *a_hi, Py_ssize_t *a_lo)
{
    *a_hi = *a_lo = -1;
    for (Py_ssize_t a = 0; a < rows && (*a_hi < 0 || *a_lo < 0); a++) {
        if (!(total[a] > 0))
            continue;
        double x = j[a * cols + c] / total[a];
        if (*a_hi < 0 && x == h)
            *a_hi = a;
        if (*a_lo < 0 && x == l)
            *a_lo = a;
    }
}

/* Running maxima and minima of P(q | a) over the rows, for the n columns from c0 (a loop the
   compiler vectorises: no index kept, no branch). */
static void
extremes_of_chunk(const double *j, Py_ssize_t rows, Py_ssize_t cols, const double *total,
                  Py_ssize_t first, Py_ssize_t c0, Py_ssize_t n, double *restrict hi,
                  double *restrict lo)
{
    const double *row = j + first * cols + c0;
    double t = total[first];
    for (Py_ssize_t c = 0; c < n; c++)
        hi[c] = lo[c] = row[c] / t;
    for (Py_ssize_t a = first + 1; a < rows; a++) {
        if (!(total[a] > 0))
            continue;
        const double *restrict r = j + a * cols + c0;
        t = total[a];
        for (Py_ssize_t c = 0; c < n; c++) {
            double x = r[c] / t;
            hi[c] = x > hi[c] ? x : hi[c];
            lo[c] = x < lo[c] ? x : lo[c];
        }
    }
}

/* definition8(table, rows) -> (value, a, b): max over columns q of
   log max_a P(q | a) - log min_b P(q | b) over rows a, b of positive total, +inf when some
   column is positive under one row and zero under another, 0 when no column is possible; a and
   b attain it (first maximum and minimum, first column), as quiltpriv.influence computes it.
   A column's term is log(hi / lo), where lo is a normal number (then 1 <= hi / lo < 2^1023:
   one rounding before the logarithm, none of the cancellation of two large logarithms), else
   log hi - log lo; quiltpriv.influence's Python paths compute the same terms. Ties are the
   common case (the influence often depends on few of the query's variables), so a column
   whose quotient does not exceed the greatest quotient evaluated so far, whose logarithm the
   best already is at least, is skipped without a logarithm: logarithms are taken only for
   new records. The attaining rows are looked up once, for the winning column. */
static int
definition8_core(const double *j, Py_ssize_t rows, Py_ssize_t cols, double *value,
                 Py_ssize_t *best_a, Py_ssize_t *best_b)
{
    double *total = malloc(sizeof(double) * (size_t)rows);
    double *hi = malloc(sizeof(double) * 2 * D8_CHUNK), *lo = hi ? hi + D8_CHUNK : NULL;
    if (total == NULL || hi == NULL) {
        free(total);
        free(hi);
        PyErr_NoMemory();
        return -1;
    }
    row_totals(j, rows, cols, total);
    Py_ssize_t first = -1;
    for (Py_ssize_t a = 0; a < rows && first < 0; a++)
        if (total[a] > 0)
            first = a;
    if (first < 0) {
        free(total);
        free(hi);
        PyErr_SetString(PyExc_ValueError, "definition8: no row has positive probability");
        return -1;
    }
    double best = -1.0, top = 0.0; /* top: the greatest quotient hi / lo evaluated so far */
    Py_ssize_t best_c = -1;
    int infinite = 0;
    double best_h = 0, best_l = 0;
    for (Py_ssize_t c0 = 0; c0 < cols && !infinite; c0 += D8_CHUNK) {
        Py_ssize_t n = cols - c0 < D8_CHUNK ? cols - c0 : D8_CHUNK;
        extremes_of_chunk(j, rows, cols, total, first, c0, n, hi, lo);
        for (Py_ssize_t c = 0; c < n; c++) {
            double h = hi[c], l = lo[c];
            if (h <= 0)
                continue;
            if (l == 0) {
                infinite = 1;
                best_c = c0 + c;
                best_h = h;
                best_l = l;
                break;
            }
            double v;
            if (l >= DBL_MIN) {
                double ratio = h / l; /* h >= l: at least 1, no underflow */
                if (ratio <= top)
                    continue;
                top = ratio;
                v = log(ratio);
            }
            else
                v = log(h) - log(l);
            if (v > best) {
                best = v;
                best_c = c0 + c;
                best_h = h;
                best_l = l;
            }
        }
    }
    if (best_c >= 0)
        attaining_rows(j, rows, cols, total, best_c, best_h, best_l, best_a, best_b);
    else
        *best_a = *best_b = first;
    free(total);
    free(hi);
    *value = infinite ? Py_HUGE_VAL : best > 0 ? best : 0.0;
    return 0;
}

/* definition8(table, rows) -> (value, a, b): max over columns q of
   log max_a P(q | a) - log min_b P(q | b) over rows a, b of positive total, +inf when some
   column is positive under one row and zero under another, 0 when no column is possible; a and
   b attain it (first maximum and minimum, first column), as quiltpriv.influence computes it. */
static PyObject *
definition8(PyObject *mod, PyObject *args)
{
    PyObject *obj;
    Py_ssize_t rows;
    (void)mod;
    if (!PyArg_ParseTuple(args, "On", &obj, &rows))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = view.len / 8, a, b;
    double value;
    if (!is_float64(&view) || rows < 1 || n % rows != 0 || n == 0)
        PyErr_SetString(PyExc_ValueError, "definition8 needs a non-empty C-contiguous float64 "
                                          "table whose size is a multiple of rows");
    else if (definition8_core((const double *)view.buf, rows, n / rows, &value, &a, &b) == 0)
        result = Py_BuildValue("(dnn)", value, a, b);
    PyBuffer_Release(&view);
    return result;
}

/* Network.influence(nodes, max_table, mode=0): Definition 8 of P(nodes) with nodes[0] the
   sensitive attribute, without handing the joint to Python; None when it is too large. */
static PyObject *
Network_influence(Network *self, PyObject *args)
{
    PyObject *nodes_obj;
    double max_table, budget = -1, stop;
    int mode = 0, m = 0, *q = NULL;
    Py_ssize_t osize, a, b;
    double value;
    if (!PyArg_ParseTuple(args, "Od|id", &nodes_obj, &max_table, &mode, &budget))
        return NULL;
    if (parse_budget(budget, &stop) < 0)
        return NULL;
    if (parse_nodes(self, nodes_obj, mode, &q, &m, &osize) < 0)
        return NULL;
    PyObject *result = NULL;
    double *out = malloc(sizeof(double) * (size_t)osize);
    start_underflow_watch();
    int rc = out ? compute_joint(self, q, m, out, max_table, mode, NULL, stop) : -1;
    if (out == NULL)
        PyErr_NoMemory();
    if (rc == -2)
        result = PyLong_FromLong(LATE);
    else if (rc == 0)
        result = Py_NewRef(Py_None);
    else if (rc == 1) {
        Py_ssize_t rows = self->card[q[0]];
        if (definition8_core(out, rows, osize / rows, &value, &a, &b) == 0) {
            /* read after Definition 8 too: its quotients of tiny entries can underflow */
            int underflow = underflowed();
            result = Py_BuildValue("(dnnO)", value, a, b, underflow ? Py_True : Py_False);
        }
    }
    free(out);
    PyMem_Free(q);
    return result;
}

static PyMethodDef module_methods[] = {
    {"definition8", definition8, METH_VARARGS,
     "definition8(table, rows) -> (value, a, b): Definition 8 from a joint table[a, ...]."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT, "quiltpriv.inference._kernel",
    "Compiled bucket elimination for quiltpriv.inference (pure-Python engines otherwise).",
    -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__kernel(void)
{
    PyObject *mod = PyModule_Create(&kernel_module);
    if (mod == NULL)
        return NULL;
    PyObject *type = PyType_FromSpec(&Network_spec);
    if (type == NULL) {
        Py_DECREF(mod);
        return NULL;
    }
    if (PyModule_AddObject(mod, "Network", type) < 0) {  /* steals type only on success */
        Py_DECREF(type);
        Py_DECREF(mod);
        return NULL;
    }
    if (PyModule_AddIntConstant(mod, "ABI", KERNEL_ABI) < 0 ||
        PyModule_AddStringConstant(mod, "SOURCE_SHA256", KERNEL_SOURCE_SHA256) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
