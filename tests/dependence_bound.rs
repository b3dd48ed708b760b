//! The dependence and fill bounds (`backend::cost::dep_bound`), worked by hand on kernels from MACHINE.md's
//! cost table. (That it never exceeds the simulated cycles of any path is checked on every example
//! and corpus kernel by `tests/backend.rs`.)
//!
//! A load or store of a 128 × 512 f32 tile (262,144 bytes) ends soonest split in 16 pieces of 8
//! partitions: `sp` issues them in 16 × 64 = 1,024 cycles, the last one's latency is 1,820, and
//! its 16,384 bytes take ⌈16,384 / 19⌉ = 863 cycles on its queue: 3,707 cycles. (8 pieces:
//! 512 + 1,820 + 1,725 = 4,057; one piece: 64 + 1,820 + 13,798.) An exp on the Scalar engine over
//! 512 elements per partition costs max(64, 512) + 60 = 572, and so does adding a constant on the
//! Vector engine (`tensor_scalar`).

mod common;

use nkc::driver::Source;
use std::path::Path;

/// The kernel `text` as written, compiled to Penguin IR.
fn kernel(text: &str) -> penguin::Function {
    let src = Source {
        path: Path::new("t.nk").to_path_buf(),
        text: text.to_string(),
    };
    nkc::driver::compile(&src, None).expect("the test kernel compiles")
}

fn bound(text: &str) -> Option<u64> {
    backend::cost::dep_bound::compute_dependence_bound(&kernel(text))
}

fn bounds(text: &str) -> backend::cost::dep_bound::KernelBoundsData {
    backend::cost::dep_bound::compute_kernel_bounds(&kernel(text)).expect("small enough to walk")
}

/// Every iteration loads what the previous one stored in HBM scratch.
const HBM_CHAIN: &str = "def hbm_chain(a: nl.hbm[nl.float32, 128, 512]):
    s = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t0 = nl.load(a[:, :])
    nl.store(s[:, :], value=t0)
    for i in nl.affine_range(3):
        t = nl.load(s[:, :])
        u = nl.add(t, 1.0)
        nl.store(s[:, :], value=u)
    t2 = nl.load(s[:, :])
    nl.store(c[:, :], value=t2)
    return c
";

/// Eight independent load → exp → store tiles.
const TILES: &str = "def tiles(a: nl.hbm[nl.float32, 1024, 512]):
    c = nl.ndarray((1024, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(8):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        e = nl.exp(t)
        nl.store(c[i * 128:(i + 1) * 128, :], value=e)
    return c
";

/// load → exp → store: 3,707 + 572 + 3,707.
#[test]
fn a_load_exp_store_chain() {
    let k = "def chain(a: nl.hbm[nl.float32, 128, 512]):
    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a[:, :])
    e = nl.exp(t)
    nl.store(c[:, :], value=e)
    return c
";
    assert_eq!(bound(k), Some(3707 + 572 + 3707));
}

/// Every iteration loads what the previous one stored in HBM scratch: the chain runs through all
/// of them. A transfer that reads all a transfer wrote may be queued right behind it (a queue is
/// first in, first out, and a transfer's latency overlaps the ones before it on its queue): its
/// piece of some rows then moves its bytes as soon as the other's piece of them has, so it ends
/// one piece's queue time after the other's last piece (863 cycles for a sixteenth of the
/// tile), and a whole transfer (3,707) after the other's start. Copy in (load 3,707, store
/// 863), three rounds of (load 863, add 572, store 3,707 after the add), copy out (load 863,
/// store 863): 21,722. Counting a latency again after each such link (33,026, as the bound did
/// when it counted one piece's latency) is above runs whose chained transfers share queues.
#[test]
fn a_chain_through_hbm() {
    let k = HBM_CHAIN;
    assert_eq!(
        bound(k),
        Some(3707 + 863 + 3 * (863 + 572 + 3707) + 2 * 863)
    );
}

/// Independent iterations do not add up: eight tiles cost one chain.
#[test]
fn independent_iterations_cost_one_chain() {
    let k = TILES;
    assert_eq!(bound(k), Some(3707 + 572 + 3707));
}

/// The fill bound of eight independent load → exp → store tiles. Each transfer moves 262,144
/// bytes: ⌈262,144 / 19⌉ = 13,798 queue cycles, 16 transfers over 16 queues = 13,798 cycles of
/// work per queue. No byte moves before the first load's issue and latency (64 + 1,820 = 1,884),
/// and nothing need follow the last store: 1,884 + 13,798 = 15,682, above the resource bound
/// (13,798) and the dependence bound (7,986). The Scalar engine's exps (8 × 572) start no sooner
/// than 3,707 and leave a store of 3,707 after them: 11,990, not the largest.
#[test]
fn the_fill_bound_adds_the_first_transfers_latency_to_the_queues_work() {
    let k = TILES;
    let b = bounds(k);
    assert_eq!(b.dependence, 3707 + 572 + 3707);
    assert_eq!(b.fill, 64 + 1820 + 13_798);
    assert_eq!(b.fill_resource, "dma");
}

/// A chain through HBM leaves nothing to overlap: each round waits for the previous round's
/// store, so the Vector engine's adds, with the chain before the first and after the last, add up
/// to the dependence bound and no more.
#[test]
fn on_a_chain_through_hbm_the_fill_bound_is_the_dependence_bound() {
    let k = HBM_CHAIN;
    let b = bounds(k);
    assert_eq!(b.dependence, 21_722);
    assert_eq!(b.fill, b.dependence, "{b:?}");
}

/// A loaded tile stored as it is: the store may be queued behind the load, piece for piece, and
/// the simulator then moves each of its pieces as soon as the load's piece of the same rows has
/// landed, with no semaphore and no latency of its own after it: 3,707 + 863, not
/// 3,707 + 2,747. And the run reaches it within `sp`'s issue slots: no path beats it.
#[test]
fn a_store_of_a_loaded_tile_queues_behind_the_load() {
    let k = "def copy(a: nl.hbm[nl.float32, 128, 512]):
    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a[:, :])
    nl.store(c[:, :], value=t)
    return c
";
    assert_eq!(bound(k), Some(3707 + 863));
}

/// A 3 × 2048 f32 tile (24,576 bytes) has no split but one piece (no other of 2, 4, 8, 16 divides
/// 3 partitions): 64 + 1,820 + ⌈24,576 / 19⌉ = 1,294 → 3,178 cycles, 1,294 of them on its queue.
const ONE_PIECE: u64 = 64 + 1820 + 1294;

/// An anti-dependence through HBM: the store to the scratch tile `s` in round `r + 1` has its data
/// as soon as its own load lands, but it overwrites what round `r` reloads, so it ends no sooner
/// than its queue time after that reload (queued right behind it: a queue is first in, first out,
/// and no path renames HBM). Round 0: load 3,178, store queued behind it 1,294, reload 1,294,
/// store of `c` 1,294 (7,060, the bound when only flow dependences counted). Then each round adds
/// the store and the reload of `s`, 2 × 1,294: the last reload ends at 3,178 + 8 × 1,294 and its
/// store of `c` 1,294 later: 14,824.
#[test]
fn a_store_of_hbm_waits_for_the_earlier_reload_of_its_bytes() {
    let k = "def reuse(a: nl.hbm[nl.float32, 12, 2048]):
    s = nl.ndarray((3, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
    c = nl.ndarray((12, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
    for r in nl.sequential_range(4):
        t = nl.load(a[r * 3:(r + 1) * 3, :])
        nl.store(s, value=t)
        v = nl.load(s)
        nl.store(c[r * 3:(r + 1) * 3, :], value=v)
    return c
";
    assert_eq!(bound(k), Some(ONE_PIECE + 9 * 1294));
    assert_eq!(bound(k), Some(14_824));
}

/// An output dependence through HBM: six rounds store to the same 5 × 2048 f32 block (40,960
/// bytes, one piece: 64 + 1,820 + ⌈40,960 / 19⌉ = 2,156 → 4,040). The loads run together, but the
/// stores keep their order: each is queued behind the one before and moves its 2,156 after it.
/// 4,040 + 6 × 2,156 = 16,976 (6,196, one load and its store, when only flow dependences counted).
#[test]
fn stores_to_the_same_hbm_bytes_keep_their_order() {
    let k = "def overwrite(a: nl.hbm[nl.float32, 30, 2048]):
    c = nl.ndarray((5, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
    for q in nl.sequential_range(6):
        t = nl.load(a[q * 5:(q + 1) * 5, :])
        nl.store(c, value=t)
    return c
";
    let b = bounds(k);
    assert_eq!(b.dependence, 64 + 1820 + 2156 + 6 * 2156);
    assert_eq!(b.dependence, 16_976);
}

/// `sp`'s fill: 32 one-row loads and their stores, 64 transfers of 8,192 bytes (⌈8,192 / 19⌉ =
/// 432 queue cycles, one piece: 64 + 1,820 + 432 = 2,316). `sp` issues at least 64 × 64 = 4,096
/// cycles, and the transfer of the last piece it issues still takes its latency after that issue
/// (1,820 + 432; a store need leave nothing after it): 4,096 + 2,316 − 64 = 6,348. Counting only
/// the latency and a sixteenth of the bytes after the last issue (5,943) ignores that a transfer
/// split in more pieces takes more issues.
#[test]
fn sps_fill_ends_with_a_whole_transfer_after_its_last_issue() {
    let k = "def rows(a: nl.hbm[nl.float32, 32, 2048]):
    c = nl.ndarray((32, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(32):
        t = nl.load(a[i:i + 1, :])
        nl.store(c[i:i + 1, :], value=t)
    return c
";
    let b = bounds(k);
    assert_eq!(b.fill, 64 * 64 + 2316 - 64);
    assert_eq!(b.fill_resource, "sp");
    assert_eq!(b.dependence, 2316 + 432);
}

/// A column block of a loaded tile spans all its partitions: every piece of the load (a band of
/// partitions with all 512 columns) holds some of it, so the exp waits for the whole load (3,707),
/// not for its first piece (2,747). exp over 128 columns: 128 + 60 = 188; the store of the
/// 128 × 128 f32 block (65,536 bytes) ends soonest in 8 pieces: 8 × 64 + 1,820 + ⌈8,192 / 19⌉ =
/// 2,764. 3,707 + 188 + 2,764 = 6,659, what every path runs (5,699 when the block waited only for
/// the first piece).
#[test]
fn a_column_block_of_a_loaded_tile_waits_for_the_whole_load() {
    let k = "def blocks(a: nl.hbm[nl.float32, 128, 512]):
    c = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    e = nl.exp(t[:, 0:128])
    nl.store(c, value=e)
    return c
";
    assert_eq!(bound(k), Some(3707 + 188 + 2764));
}

/// A kernel of `tests/good`, as written.
fn good(file: &str, name: &str) -> backend::cost::dep_bound::KernelBoundsData {
    let src = Source::read(&Path::new("tests/good").join(file)).expect("the good kernel exists");
    let func = nkc::driver::compile(&src, Some(name)).expect("the good kernel compiles");
    backend::cost::dep_bound::compute_kernel_bounds(&func).expect("small enough to walk")
}

/// `tests/good/column_blocks.nk`'s `first_block`: the 64 × 1024 bf16 load (131,072 bytes) ends
/// soonest in 8 pieces (512 + 1,820 + ⌈16,384 / 19⌉ = 3,195), the exp of a 128-column block that
/// spans its partitions waits for all of it (+ 188), and the 64 × 128 f32 store (32,768 bytes)
/// ends soonest in 4 pieces (256 + 1,820 + ⌈8,192 / 19⌉ = 2,508): 5,891, what every path runs.
#[test]
fn the_good_column_block_waits_for_the_whole_load() {
    assert_eq!(
        good("column_blocks.nk", "first_block").dependence,
        3195 + 188 + 2508
    );
}

/// `tests/good/hbm_reuse.nk`'s `reuse_scratch` (3 × 2048 f32 tiles, one piece each: 3,178 and
/// 1,294 on the queue; the reload of half of `s`, 2,531 and 647). Round 0: load, store of `s`
/// queued behind it (4,472), reload queued behind that (5,119). The store of `s` in round r + 1
/// ends 1,294 after the reload of round r, and each reload (half of `s`'s columns, all its
/// partitions, but not all of the rectangle written) only its own 647 after the store's first
/// bytes: the stores end at 4,472 + 647 + r × 1,294 (r ≥ 1) and the reloads with them. Round 4:
/// reload 10,295, exp of 1,024 columns (1,084), store of the block (2,531): 13,910, against
/// 8,734 (round 0's chain) without the anti-dependence.
#[test]
fn the_good_scratch_reuse_chains_its_rounds_through_hbm() {
    let b = good("hbm_reuse.nk", "reuse_scratch");
    assert_eq!(b.dependence, 4472 + 647 + 4 * 1294 + 1084 + 2531);
    assert_eq!(good("hbm_reuse.nk", "overwrite_block").dependence, 16_976);
}

/// A masked instruction counts, in each iteration, the box its mask keeps: a load, exp and store
/// of a 128-row tile masked to its first 72 rows are bounded exactly as the same chain on a
/// 72-row tile, unmasked (and not as the least instruction of each kind).
#[test]
fn a_mask_counts_the_rows_it_keeps() {
    let masked = "def masked(a: nl.hbm[nl.float32, 128, 512]):
    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    ix = nl.arange(128)[:, None]
    iy = nl.arange(512)[None, :]
    t = nl.load(a[ix, iy], mask=(ix < 72))
    nl.store(c[ix, iy], value=nl.exp(t, mask=(ix < 72)), mask=(ix < 72))
    return c
";
    let cut = "def cut(a: nl.hbm[nl.float32, 72, 512]):
    c = nl.ndarray((72, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a[:, :])
    nl.store(c[:, :], value=nl.exp(t))
    return c
";
    assert_eq!(bounds(masked), bounds(cut));
    // 72 rows split 8 ways (9 rows of 18,432 bytes, 971 cycles on a queue): 512 + 1,820 + 971
    // for each transfer, and 572 for the exp.
    assert_eq!(bound(cut), Some(2 * (8 * 64 + 1_820 + 971) + 572));
}

/// A ragged last iteration: each iteration counts its own rows (128, then 72), and an iteration
/// whose mask keeps nothing runs nothing.
#[test]
fn each_iteration_of_a_ragged_loop_counts_its_own_rows() {
    let ragged = |n: u64, trips: u64| {
        format!(
            "def ragged(a: nl.hbm[nl.float32, {n}, 512]):
    c = nl.ndarray(({n}, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    ix = nl.arange(128)[:, None]
    iy = nl.arange(512)[None, :]
    for i in nl.affine_range({trips}):
        t = nl.load(a[i * 128 + ix, iy], mask=(i * 128 + ix < {n}))
        nl.store(c[i * 128 + ix, iy], value=nl.exp(t), mask=(i * 128 + ix < {n}))
    return c
"
        )
    };
    let (full, rest) = (bounds(&ragged(256, 2)), bounds(&ragged(200, 2)));
    // The full tiles' chain (a_load_exp_store_chain) is the longest either way: the queues'
    // work is what differs.
    assert_eq!(full.dependence, 3_707 + 572 + 3_707);
    assert!(rest.dependence >= 3_707 + 572 + 3_707, "{rest:?}");
    // A third iteration past the rows keeps nothing: the bounds are the two iterations'.
    assert_eq!(bounds(&ragged(200, 3)), rest);
}

/// A scatter's pieces move one after the other, and each of its rows is a descriptor of its own.
/// The load of the 32 × 200 f32 tile (25,600 bytes) ends soonest in 4 pieces: 4 × 64 + 1,820 +
/// ⌈6,400 / 19⌉ = 2,413; the exp over 200 columns costs 200 + 60 = 260. The scatter's 32 rows
/// of 800 bytes take 32 × ⌈800 / 19⌉ = 32 × 43 = 1,376 queue cycles however it is split, and its
/// pieces, which may all write the same rows, move one after the other: one issue, the latency
/// and all 1,376 cycles, 3,260. 2,413 + 260 + 3,260 = 5,933. Counted as a transfer whose pieces
/// overlap (4 pieces, like the load: 2,413) the bound was 5,086, while the four pieces of the
/// scatter, split on four queues, each waited for the one before: 11,796 cycles.
#[test]
fn a_scatters_pieces_move_one_after_another() {
    let b = bounds(common::SCATTER_ROWS);
    assert_eq!(b.dependence, 2413 + 260 + (64 + 1820 + 32 * 43));
}
