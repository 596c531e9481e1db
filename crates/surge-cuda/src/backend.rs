//! `CudaBackend`: the particles of one device on one GPU.
//!
//! The device's arrays read `copies from the left | owned | copies from the right`, each
//! block sorted by cell key and id after a rebuild, as on the CPU (the reference,
//! `surge-cpu`). Buffers are allocated with headroom, since the number of particles held
//! changes at each rebuild (migration, copies), and grow when a rebuild needs more.

use crate::compile::{arch_for, compile, defines, traversal_note};
use crate::ipc::{self, Exported, Imports, Shared, SharedEvent};
use crate::peer::{self, EdgeBlock, RebuildBlock, Staging};
use cudarc::driver::{
    result, sys, CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, CudaView, DevicePtr, DriverError,
    LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use std::ops::Range;
use std::sync::Arc;
use surge_core::backend::{
    Backend, BadParticle, DeviceBlock, DeviceStep, Failure, ForceStats, Link, Part, Snapshot, Update, UpdateStats,
    DENSITY_OUT, LEFT_DOMAIN,
};
use surge_core::bodies::{BodyLoad, LOAD_LEN};
use surge_core::buffers::{self, BufferId, BufferSet, Kind, ParticleState};
use surge_core::case::{Case, Gauge};
use surge_core::config::OnExit;
use surge_core::decomp::{Side, SliceMap};
use surge_core::gauge::{height_intervals, Interpolate, ParticleLoad};
use surge_core::geometry::Filled;
use surge_core::grid::Grid;
use surge_core::motion::{SolidMove, MOVE_LEN};
use surge_core::open::OpenPressure;
use surge_core::physics::constants::Constants;

mod mdbc;

/// The GPU's skin as a fraction of the kernel support in 2D: a rebuild costs less than a
/// force pass there, so the cells are tighter than on the CPU (fewer candidate neighbours).
/// `SURGE_CUDA_SKIN` overrides it for tuning.
pub const CUDA_SKIN_FRACTION: f64 = 0.02;

/// The skin in 3D with dynamic walls. A developed flow rebuilds about every step whatever
/// the skin (at 2 m/s the drift and the look-ahead pass half a skin of 2 % within two
/// steps), so the thinnest cells win: the SPHERIC Test 2 benchmark (`dam_break_3d`) at dp
/// 0.006 on an H100 (docs/PERFORMANCE.md, "A thinner skin"),
/// 0.02 / 0.01 / 0.005 gave 7.94 / 7.80 / 7.68 ms/step in the middle of the run, and the
/// whole run to t = 1.5 s took 7.63 ms/step with 0.005 against 7.86 with 0.02.
pub const CUDA_SKIN_FRACTION_3D: f64 = 0.005;

/// The skin with mDBC walls in 2D, whose rebuild also lists and orders the walls' ghost
/// nodes: a wider skin, fewer rebuilds (not measured in 2D; in 3D this was the default while
/// its force pass was slower: SPHERIC Test 2 at dp 0.006 over the developed flow on an H100,
/// 0.02 / 0.04 / 0.07 / 0.10 gave 13.78 / 13.49 / 13.58 / 14.07 ms/step).
pub const CUDA_SKIN_FRACTION_MDBC: f64 = 0.04;

/// The skin with mDBC walls in 3D: as for dynamic walls ([`CUDA_SKIN_FRACTION_3D`]). A
/// developed flow rebuilds about every step whatever the skin, and the thinnest cells won
/// over the ghost nodes' rebuild. SPHERIC Test 2 at dp 0.006 (docs/PERFORMANCE.md, "mDBC's
/// skin as the dynamic walls'"): from rest to t = 0.6 s on one H200, 9.200 ms/step with 0.01
/// (this skin until then) against 8.802 with 0.005, and 8.521 with 0.005 and the list kept
/// across rebuilds; in the middle of the run (t = 0.3 s) 7.92 against 7.64. Earlier, on an
/// H100: 0.04 / 0.02 / 0.01 gave 10.39 / 9.85 / 9.59 ms/step in the middle of the run.
pub const CUDA_SKIN_FRACTION_MDBC_3D: f64 = CUDA_SKIN_FRACTION_3D;

/// The GPU's cells are half the support (plus skin) and its stencil reaches two cells each
/// side: 125 small cells in 3D hold about 40 % fewer candidate neighbours than 27 large ones,
/// and checking candidates is half the force pass.
pub const STENCIL_REACH: i32 = 2;

/// [`STENCIL_REACH`], or `SURGE_CUDA_REACH` (2 or 3: cells a third of the support) for
/// tuning; 1 (cells of the whole support) for the `cta` traversal, whose blocks take a cell
/// each.
pub fn stencil_reach(case: &Case) -> i32 {
    if case.traversal == surge_core::config::Traversal::Cta {
        return 1;
    }
    std::env::var("SURGE_CUDA_REACH")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|r| (2..=3).contains(r))
        .unwrap_or(STENCIL_REACH)
}

/// The whole grid the CUDA backend keys `case` on: cells of [`skin_fraction`] and
/// [`stencil_reach`]. In 3D the cell key's fastest axis, along which the `ranges` traversal
/// walks a stencil row as one range, is the one of the two axes after the split axis least
/// along the body force ([`row_axis`]): a row then lies at one depth instead of crossing the
/// free surface, so the rows of a warp's lanes hold alike numbers of particles.
/// `SURGE_CUDA_FAST_AXIS` (x, y or z, not the split axis) chooses it instead, for tuning.
pub(crate) fn cuda_grid(case: &Case) -> Result<Grid, String> {
    let mut g = Grid::with_skin(case, case.split_axis(), skin_fraction(case), stencil_reach(case))?;
    let asked = std::env::var("SURGE_CUDA_FAST_AXIS").ok().and_then(|v| ["x", "y", "z"].iter().position(|a| *a == v));
    if case.dim == 3 {
        let fast = asked.filter(|&f| f != g.order[0]).unwrap_or_else(|| row_axis(case, g.order));
        if fast == g.order[1] {
            g.order = [g.order[0], g.order[2], g.order[1]];
        }
    }
    Ok(g)
}

/// Of the two axes after the split axis (`order[1]`, `order[2]`), the one whose body force
/// component is smaller in magnitude; `order[2]` on a tie (no body force, or one along the
/// split axis). A periodic axis is taken only where both are: rows do not wrap, and
/// `ranges` needs its rows' axis walled. SPHERIC Test 2 (gravity along z, split along x)
/// at dp 0.006 on an H100: rows along y instead of z gave 7.21 against 8.30 ms/step over
/// the flow at t = 0.3 s, 6.23 against 6.27 at rest, 9.21 against 10.33 with mDBC, and
/// 7.87 against 8.54 over the whole run (docs/PERFORMANCE.md, "Rows across the free
/// surface").
pub(crate) fn row_axis(case: &Case, order: [usize; 3]) -> usize {
    let (a, b) = (order[1], order[2]);
    match (case.periodic[a], case.periodic[b]) {
        (false, true) => a,
        (true, false) => b,
        _ if case.body_force[a].abs() < case.body_force[b].abs() => a,
        _ => b,
    }
}

/// The skin fraction of `case` on the GPU ([`CUDA_SKIN_FRACTION_MDBC_3D`] and
/// [`CUDA_SKIN_FRACTION_MDBC`] with mDBC walls in 3D and 2D, else [`CUDA_SKIN_FRACTION_3D`]
/// and [`CUDA_SKIN_FRACTION`]; `SURGE_CUDA_SKIN` overrides them).
pub(crate) fn skin_fraction(case: &Case) -> f64 {
    std::env::var("SURGE_CUDA_SKIN").ok().and_then(|s| s.parse().ok()).filter(|&x: &f64| x > 0.0 && x < 1.0).unwrap_or(
        if case.boundary.is_mdbc() && case.dim == 3 {
            CUDA_SKIN_FRACTION_MDBC_3D
        } else if case.boundary.is_mdbc() {
            CUDA_SKIN_FRACTION_MDBC
        } else if case.dim == 3 {
            CUDA_SKIN_FRACTION_3D
        } else {
            CUDA_SKIN_FRACTION
        },
    )
}

/// Particles a host image holds at a time: the fill's upload and the snapshots go through
/// buffers of this many particles (40 bytes each pinned, 44 in the upload's images), so
/// the host never holds a second copy of a device's particles.
pub const HOST_CHUNK: usize = 1 << 20;
/// Threads per block of the particle kernels.
const BLOCK: u32 = 256;
/// Threads per block of the force kernel with the `cta` traversal (CTA_THREADS in
/// kernels/step.cu): about a cell of the whole support's particles at h = 2 dp.
const CTA_BLOCK: u32 = 64;
/// Elements per block of the scan kernels (SCAN_BLOCK in step.cu).
const SCAN_BLOCK: usize = 1024;
/// Threads per block of the scan kernels, four elements each (SCAN_THREADS in step.cu).
const SCAN_THREADS: u32 = 256;
/// Initial value of the stats words: maxima 0, failed id "none".
const STATS_INIT: [u32; 8] = [0, 0, 0, 0, u32::MAX, 0, 0, 0];
/// Index of the lowest failed id in the stats words (STAT_BAD_ID in step.cu).
const STAT_BAD_ID: usize = 4;
/// Index of the count of particles a rekey removed (STAT_REMOVED in step.cu).
const STAT_REMOVED: usize = 6;
/// Index of the count of those removed for their density (STAT_DENSITY_OUT in step.cu).
const STAT_DENSITY_OUT: usize = 5;
/// Index of the most fluid particles of one cell past 255, 0 when none (STAT_CELL_FLUID).
const STAT_CELL_FLUID: usize = 7;

/// The GPU keeps a particle's cell in its pos.w: the bits of the cell's linear index on the
/// whole grid `g` ([`Grid::linear`], undone by [`Grid::cell_of`]; `cell_word` and
/// `cell_coords` in step.cu), `CELL_REMOVED` (all ones) for a particle the next sort drops;
/// every particle's mass is the case's (`MASS`). The host's state keeps the cell and the mass
/// apart: [`to_device_pos`] and [`to_host_pos`] convert at the upload and the export. A grid
/// of `u32::MAX` cells or more is refused ([`CudaBackend::new`]).
fn cell_word(g: &Grid, c: [i32; 4]) -> u32 {
    g.linear([c[0], c[1], c[2]]) as u32
}

/// Host positions (offset, mass) and cells to the GPU's positions (offset, cell word).
fn to_device_pos(g: &Grid, pos: &mut [[f32; 4]], cell: &[[i32; 4]]) {
    for (p, c) in pos.iter_mut().zip(cell) {
        p[3] = f32::from_bits(cell_word(g, *c));
    }
}

/// The GPU's positions back to the host's (offset, `mass`), with their cells.
fn to_host_pos(g: &Grid, mass: f32, pos: &mut [[f32; 4]], cell: &mut [[i32; 4]]) {
    for (p, c) in pos.iter_mut().zip(cell) {
        *c = g.cell_of(p[3].to_bits() as usize);
        p[3] = mass;
    }
}

/// Words of a cell table of `bins` bins, `per_cell` a cell ([`crate::compile::table_bins`]):
/// the bins + 2 starts, and with one bin a cell a byte a cell of fluid count (`CellTable` in
/// step.cu).
fn table_words(bins: usize, per_cell: usize) -> usize {
    bins + 2 + if per_cell == 1 { bins.div_ceil(4) } else { 0 }
}

/// Particles the per-particle buffers have room for when `n` are held: 30 % headroom plus
/// 1024, so migration and copies rarely make a rebuild grow them.
pub fn capacity_for(n: usize) -> usize {
    n + (3 * n).div_ceil(10) + 1024
}

/// The headroom of a device of a team that holds `n` particles, the most of one cell layer
/// of its slice being `layer`, with a neighbour on `sides` of its two sides (1 at the ends
/// of a team, 2 between): room for its halo's copies from each neighbour and the load
/// balancer's moves of a rebuild (`halo + MAX_MOVE + 1` layers a neighbour), 2 % for
/// migration, and 1024; never more than [`capacity_for`]'s 30 %. A large case's slice is
/// thousands of layers thick, where 30 % held a third of the memory idle (a team's device
/// took 150-159 bytes a particle where a device alone takes 109); a small one keeps the 30 %.
/// The end of a team takes nothing in from its outer side: counting a neighbour there held a
/// two-device team's devices at 105-111 bytes a particle (Test 2, dp 0.006). A rebuild that
/// needs more grows the buffers by as much again ([`CudaBackend::ensure_capacity`]).
pub fn team_headroom(n: usize, layer: usize, halo: usize, sides: usize) -> usize {
    let layers = sides * headroom_layers(halo) * layer;
    (layers + n.div_ceil(50) + 1024).min(capacity_for(n) - n)
}

/// [`team_headroom`] of device `me` of the team `map`: its neighbours are on the sides it has
/// inside the team (the split axis is never periodic: [`surge_core::Case::divisible`]).
fn headroom_in(map: &SliceMap, me: usize, n: usize, layer: usize) -> usize {
    let sides = usize::from(me > 0) + usize::from(me + 1 < map.devices());
    team_headroom(n, layer, map.halo.max(0) as usize, sides)
}

/// Device bytes per particle that device `me` of a team cut by `map` on the whole grid
/// `whole` ([`crate::grid_for`]) takes at load, holding `n` particles of a case of `ids`
/// particles, the fullest cell layer in or next to its slice being `layer`: what
/// [`CudaBackend::streamed_in_team`] allocates (its buffers with the team's headroom, its
/// window's cell table of two bins a cell) and reports. `surge check --devices` prints it
/// before a run.
pub fn team_bytes_per_particle(
    case: &Case,
    whole: &Grid,
    n: usize,
    ids: u64,
    layer: usize,
    map: &SliceMap,
    me: usize,
) -> usize {
    let (wl, wh) = map.window(me);
    let cap = n + headroom_in(map, me, n, layer);
    let cells = whole.windowed(wl, wh).cell_count();
    let (set, mdbc) = (gpu_buffers(case), case.boundary.is_mdbc());
    allocated_per_particle(set, info_words(case, ids), mdbc, n, cap, cells, crate::compile::table_bins(whole))
}

/// The layers a side a team's device keeps room for ([`team_headroom`]): its halo's copies and
/// the load balancer's moves of a rebuild, and one more; `layer` is the fullest of those
/// within this reach of its slice.
pub fn headroom_layers(halo: usize) -> usize {
    halo + surge_core::decomp::MAX_MOVE as usize + 1
}

struct Kernels {
    rekey: CudaFunction,
    key_sort: CudaFunction,
    classify: CudaFunction,
    histogram: CudaFunction,
    scan_sum: CudaFunction,
    scan_block: CudaFunction,
    scan_add: CudaFunction,
    scatter: CudaFunction,
    order_bins: CudaFunction,
    gather16: CudaFunction,
    gather8: CudaFunction,
    gather4: CudaFunction,
    forces: CudaFunction,
    /// Threads per block of `forces` (the `cta` traversal's blocks are smaller).
    forces_block: u32,
    /// mDBC cases only (compiled only for them).
    mdbc: Option<CudaFunction>,
    mdbc_list: Option<CudaFunction>,
    mdbc_ghost_key: Option<CudaFunction>,
    mdbc_fix: Option<CudaFunction>,
    update: CudaFunction,
    dt: CudaFunction,
    gauge_sums: CudaFunction,
    front: CudaFunction,
    boundary_loads: CudaFunction,
    body_loads: CudaFunction,
    /// Open boundaries (compiled only for cases with some).
    open: Option<CudaFunction>,
    open_rebuild: Option<CudaFunction>,
    rotate_perm: CudaFunction,
}

/// The particles a rebuild's sort drops: of the first `held` (those held before the
/// rebuild; the neighbours' particles follow them), the copies (outside `own`) and the owned
/// particles that left the device's new window, `dropped` in all.
struct Dropping {
    held: usize,
    own: Range<usize>,
    dropped: usize,
}

/// One level of the multi-level scan. Level 0 scans the cell table in place; level
/// l > 0 scans the block sums of level l - 1 into its own `out`, which then holds the
/// offsets that level l - 1 adds back to its blocks.
struct ScanLevel {
    /// Values scanned at this level.
    len: usize,
    /// Output of levels above 0 (`len` values).
    out: Option<CudaSlice<u32>>,
    /// Block totals (`len / SCAN_BLOCK` rounded up).
    sums: CudaSlice<u32>,
}

/// Particles of one device on one GPU. Device buffers hold raw 32-bit words (float4 as four
/// words), so the force buffer serves as the target of every gather of the sort.
///
/// Every method binds the GPU's context to the calling thread, so a backend built on one
/// thread can be driven from another (cudarc binds it too, on every call it makes).
pub struct CudaBackend {
    /// The case.
    case: Arc<Case>,
    /// Fluid particles dropped since the start because they left the domain or their
    /// density range.
    removed: u64,
    /// Of `removed`, those dropped for their density (`domain.density_range`).
    removed_for_density: u64,
    /// The re-key's density bounds: open until [`Backend::arm_density_range`].
    density_bounds: [f32; 2],
    /// Open boundaries: particles the inlets made and those that flowed out, since the start.
    spawned: u64,
    outflow: u64,
    /// The time of the next force pass (the inlets' prescribed velocities).
    time: f64,
    /// The open boundaries' table (`kernels/step.cu`, OPEN_HEAD and OPEN_ZONE), its host
    /// image, and the counters of their rebuild step.
    open_table: CudaSlice<f64>,
    open_table_host: Vec<f64>,
    open_table_sent: Vec<f64>,
    open_counters: CudaSlice<u32>,
    /// The case's constants (density and pressure for snapshots).
    consts: Constants,
    /// The whole grid.
    whole: Grid,
    /// The grid restricted to this device's window (slice and bands of copies).
    win: Grid,
    name: String,
    compile_note: String,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    k: Kernels,
    /// Particles held, copies included.
    n: usize,
    /// Particles every per-particle buffer has room for.
    cap: usize,
    /// A team's device: the headroom its buffers keep over what it holds, also when a
    /// rebuild grows them ([`team_headroom`]); `None`: [`capacity_for`]'s 30 %.
    headroom: Option<usize>,
    /// Bins of the cell table: `per_cell` for each cell of the window.
    bins: usize,
    /// The cell table's bins a cell ([`crate::compile::table_bins`]).
    per_cell: usize,
    buffers: BufferSet,
    /// The decomposition of the last rebuild and this device's number in it.
    map: SliceMap,
    me: usize,
    /// Owned particles.
    own: Range<usize>,
    /// The edges the left and right neighbours copy (empty without a neighbour).
    edges: [Range<usize>; 2],
    /// mDBC: the particles whose boundary values the mDBC pass sets, the owned ones and the
    /// copies within the stencil reach of them (those the force pass reads).
    mdbc_range: Range<usize>,
    /// mDBC: how many particles of `mdbc_range` the last rebuild listed in `mdbc_list` for the pass
    /// (one word, on the device: the pass reads it, the host never waits for it); `perm`
    /// holds the list's order by ghost cell until the next rebuild.
    mdbc_listed: CudaSlice<u32>,
    /// mDBC: the counting sort of the list by ghost cell, a table like the cell table
    /// (`bins + 2` values) and its scan levels.
    mdbc_table: Option<(CudaSlice<u32>, Vec<ScanLevel>)>,
    pos: CudaSlice<u32>,
    vel: CudaSlice<u32>,
    /// Ids and kinds, `info_words` words a particle ([`info_words`]).
    info: CudaSlice<u32>,
    info_words: usize,
    vel_prev: CudaSlice<u32>,
    pos_prev: Option<CudaSlice<u32>>,
    wall: Option<CudaSlice<u32>>,
    shift: Option<CudaSlice<u32>>,
    /// mDBC values (scratch: every force pass rewrites them).
    mdbc: Option<CudaSlice<u32>>,
    /// Forces; also the target of the sort's gathers (every force pass rewrites it).
    force: CudaSlice<u32>,
    /// mDBC: the particles of the pass, listed at each rebuild.
    mdbc_list: Option<CudaSlice<u32>>,
    /// mDBC with static walls (`compile::mdbc_in_vel`; `SURGE_CUDA_MDBC_FIXED=0` turns it
    /// off) on a device alone: the ordered list kept in `mdbc_list` as each entry's cell and
    /// place in the cell's boundary bin, one word an entry (`mdbc_fix_kernel`), made at a
    /// rebuild and kept while `mdbc_fixed_key` holds. Set to false for good where a grid's
    /// cells or a bin's wall particles do not fit the word.
    mdbc_fixed: bool,
    /// One word (only where `mdbc_fixed` starts true): set by `mdbc_fix_kernel` where an
    /// entry does not fit its word.
    mdbc_fix_bad: Option<CudaSlice<u32>>,
    /// The window and owned layers (`wlo`, `whi`, owned start and end, reach) the kept list
    /// was made for; None: `mdbc_list` holds the list itself (and `perm` its order).
    mdbc_fixed_key: Option<[i32; 5]>,
    /// Sort permutation; also the lists of particles to send during a rebuild (until the
    /// sort), and between rebuilds the mDBC list's order.
    perm: CudaSlice<u32>,
    /// Between the halves of a rebuild of several devices: which held particles the sort
    /// drops.
    dropping: Option<Dropping>,
    /// Between the halves of a rebuild of a device alone: the re-key's statistics are still
    /// on the device, read with the sort's counts ([`Self::sort`]).
    rekey_unread: bool,
    /// The cell table: the start of each bin, `bins + 2` values built in place by the sort,
    /// and with one bin a cell a byte a cell of fluid count ([`table_words`]).
    cell_start: CudaSlice<u32>,
    scan: Vec<ScanLevel>,
    stats: CudaSlice<u32>,
    /// Small reads at the host (stats, counters, cell starts: [`read_words`]).
    words_host: PinnedHostSlice<u32>,
    /// Recorded by [`Self::settle`] to wait for the stream.
    settled: CudaEvent,
    /// The time step dt_kernel leaves for the update, then the one before landing (two
    /// float64, four words).
    dt_dev: CudaSlice<u32>,
    /// Timing events recorded at a rebuild's start and end, whose tail a device alone leaves
    /// queued ([`Backend::rebuild_device_seconds`]); None where they could not be made.
    rebuild_marks: Option<[CudaEvent; 2]>,
    /// 1: the start is recorded; 2: the end too, not yet read.
    rebuild_marked: u8,
    /// Timing events around an update that takes its time step on the device: from the
    /// force pass's end to the update's, so the worker can tell the force pass it waited
    /// for from the update ([`DeviceStep::device_seconds`]).
    update_marks: Option<[CudaEvent; 2]>,
    /// Counters of the rebuild's classification: leaving, to the left, to the right.
    counters: CudaSlice<u32>,
    /// Stand in for buffers a case does not use (never touched by its kernels): one for
    /// inputs, one for outputs, so both can appear in one launch.
    dummy: CudaSlice<u32>,
    dummy_out: CudaSlice<u32>,
    /// The moving solids' moves of the next update (36 doubles each) and their number.
    moves: CudaSlice<f64>,
    nmoves: i32,
    host_pos: PinnedHostSlice<u32>,
    host_vel: PinnedHostSlice<u32>,
    host_info: PinnedHostSlice<u32>,
    /// The edges' force values for the neighbours, per side (Force values, then Shift
    /// values), copied as soon as the edge forces are done.
    edge_stage: [PinnedHostSlice<u32>; 2],
    /// Recorded after the edge forces (and the copies of their values to `edge_stage`, when
    /// staged), before the inner forces. Shared with the neighbours' edge blocks
    /// ([`crate::peer`]): a block still held means a neighbour may still be copying.
    edge_done: Arc<CudaEvent>,
    /// Per side, whether a force pass copies the edge's values to `edge_stage` (a host
    /// link); off where the values go to the neighbour GPU to GPU.
    edges_to_host: [bool; 2],
    /// Per side, whether this force pass's edge values are in `edge_stage`.
    edges_staged: [bool; 2],
    /// The staging buffers of the last rebuild's particles for each neighbour, GPU to GPU
    /// (shared with the blocks sent).
    peer_out: [Option<Arc<Staging>>; 2],
    /// Other GPUs of this process met so far (ordinals), and whether this one reaches their
    /// memory directly.
    reached: Vec<(usize, bool)>,
    /// The sides whose neighbour is a GPU of another rank of this node (CUDA IPC, see
    /// [`crate::ipc`]), as the last rebuild was told ([`Link::Node`]).
    shared: [bool; 2],
    /// The exported buffers of the particles for such a neighbour, two per side used in
    /// turn, and whose turn is next.
    ipc_out: [[Option<Exported>; 2]; 2],
    ipc_turn: [usize; 2],
    /// The exported buffers of the edges' force values for such a neighbour, per side.
    ipc_edges: [Option<Exported>; 2],
    /// Recorded after the copies into `ipc_edges`.
    ipc_event: Option<SharedEvent>,
    /// Exported buffers replaced by larger ones: kept until the backend is dropped.
    ipc_retired: Vec<Exported>,
    /// The trial buffer of [`Backend::share_offer`].
    ipc_probe: Option<Exported>,
    /// The neighbours' exported memory and events, mapped here.
    imports: Imports,
    /// The neighbours' force values on their way into the copies, per side.
    copy_stage: [PinnedHostSlice<u32>; 2],
    /// Recorded after each upload from `copy_stage`, which must end before it is refilled.
    copy_done: [CudaEvent; 2],
    gauge_cell: CudaSlice<u32>,
    gauge_off: CudaSlice<u32>,
    gauge_out: CudaSlice<f64>,
    front_out: CudaSlice<u64>,
    /// Force gauges: the id ranges, the entry counter and the entries of `boundary_loads_kernel`
    /// (12 words each), grown when a sample needs more.
    loads_ids: CudaSlice<u32>,
    loads_count: CudaSlice<u32>,
    loads_out: CudaSlice<u32>,
    /// Floating bodies: the grid and the bodies for `body_loads_kernel` (`BODY_WORDS`
    /// float64 each), and its sums (6 per body); their host sides, reused.
    body_table: CudaSlice<f64>,
    body_out: CudaSlice<u64>,
    body_table_host: Vec<f64>,
    body_out_host: Vec<u64>,
}

/// Float64 per body in `body_loads_kernel`'s table (`BODY_WORDS` in kernels/loads.cu).
const BODY_WORDS: usize = 10;
/// The open boundaries' table: the values before the zones, and per zone (`kernels/step.cu`).
const OPEN_HEAD: usize = 9;
const OPEN_ZONE: usize = 17;

/// A CUDA failure, naming what was running.
fn fail(what: &str, e: impl std::fmt::Debug) -> String {
    format!("CUDA error in {what}: {e:?}")
}

/// Wait on the host until the work queued on `stream` so far is over, on `event` recorded
/// now ([`CudaBackend::settle`] says why never otherwise).
fn settle(stream: &CudaStream, event: &CudaEvent, what: &str) -> Result<(), String> {
    event.record(stream).map_err(|e| fail(what, e))?;
    event.synchronize().map_err(|e| fail(what, e))
}

/// The device words `views` (8 in all at most), one after the other, once the stream has
/// reached them: queued copies into the pinned `host`, then one wait ([`settle`]).
fn read_words(
    stream: &Arc<CudaStream>,
    event: &CudaEvent,
    host: &mut PinnedHostSlice<u32>,
    views: &[CudaView<'_, u32>],
    what: &str,
) -> Result<[u32; 8], String> {
    let h = host.as_mut_slice().map_err(|e| fail(what, e))?;
    let mut at = 0;
    for v in views {
        // Into pinned memory (the driver knows it by its address): queued, no wait.
        let dst = h.get_mut(at..at + v.len()).ok_or_else(|| format!("{what}: more than 8 words to read"))?;
        stream.memcpy_dtoh(v, dst).map_err(|e| fail(what, e))?;
        at += v.len();
    }
    settle(stream, event, what)?;
    let h = host.as_slice().map_err(|e| fail(what, e))?;
    Ok(h[..8].try_into().expect("the buffer holds 8 words"))
}

fn cfg(threads: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((threads as u32).div_ceil(BLOCK).max(1), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Queue the gather of the `idx.len()` particles listed in `idx` from `src` (`per` words
/// each, 1, 2 or 4) to the device memory at `dst`.
///
/// # Safety
/// The indices must lie below `src`'s particle count; `dst` must hold `per * idx.len()`
/// words and stay allocated until the gather is over.
unsafe fn gather(
    stream: &CudaStream,
    k: &Kernels,
    idx: &CudaView<'_, u32>,
    src: &CudaSlice<u32>,
    per: usize,
    dst: sys::CUdeviceptr,
) -> Result<(), DriverError> {
    let m = idx.len();
    let count = m as i32;
    let mut b = stream.launch_builder(match per {
        4 => &k.gather16,
        2 => &k.gather8,
        _ => &k.gather4,
    });
    b.arg(&count).arg(idx).arg(src).arg(&dst);
    // SAFETY: argument types match gather16_kernel / gather8_kernel / gather4_kernel (a
    // device address for the output); the caller's promises cover the memory.
    unsafe { b.launch(cfg(m)) }.map(|_| ())
}

/// A neighbour's particles at a rebuild, on its GPU.
enum Incoming {
    /// From a GPU of this process.
    Local(Box<RebuildBlock>),
    /// From a GPU of another rank of this node: mapped here at `src`.
    Shared { src: sys::CUdeviceptr, count: usize, buffers: BufferSet },
}

impl Incoming {
    fn count(&self) -> usize {
        match self {
            Incoming::Local(b) => b.count,
            Incoming::Shared { count, .. } => *count,
        }
    }
    fn buffers(&self) -> BufferSet {
        match self {
            Incoming::Local(b) => b.buffers,
            Incoming::Shared { buffers, .. } => *buffers,
        }
    }
}

/// Words of one buffer's segment in a staging buffer: `per * m`, rounded up to 4 words so
/// the next segment starts 16-byte aligned (the 16-byte gathers write `uint4`s).
fn segment_words(per: usize, m: usize) -> usize {
    (per * m).next_multiple_of(4)
}

/// The buffers a case holds on a GPU: [`BufferSet::for_case`] less the pressure (computed
/// where it is used), the cell (in pos.w), the sort key (computed where it is used) and,
/// where the mDBC values live in the velocity buffer ([`crate::compile::mdbc_in_vel`]), the
/// mDBC buffer. The ids and kinds may take one word instead of two ([`info_words`]).
pub fn gpu_buffers(case: &Case) -> BufferSet {
    // The cell lives in pos.w ([`cell_word`]), the mass is the case's; the sort computes its
    // keys where it uses them.
    let mut set = BufferSet::for_case(case).0 & !BufferId::Press.bit() & !BufferId::Cell.bit() & !BufferId::Key.bit();
    if crate::compile::mdbc_in_vel(case) {
        set &= !BufferId::Mdbc.bit();
    }
    BufferSet(set)
}

/// Device bytes per particle a case holds on a device alone, on the GPU's grid
/// ([`crate::grid_for`]: half-support cells, finer than the CPU's): its buffers
/// ([`gpu_buffers`]) for each particle, and the cell table (two bins a cell, 8 bytes, or on
/// grids too large for them a start and a fluid count, 5 bytes: [`crate::compile::table_bins`];
/// with mDBC a second table of as many starts, which orders its list by ghost cell). A team's
/// device also keeps headroom ([`team_headroom`]) and reports what it holds.
pub fn bytes_per_particle(case: &Case, particles: usize) -> Result<usize, String> {
    bytes_per_particle_with(case, particles, None)
}

/// [`bytes_per_particle`] with the cell table of `per_cell` bins a cell (None: the grid's
/// [`crate::compile::table_bins`]; 1 is what a GPU takes where two do not fit its memory,
/// [`CudaBackend`]'s load).
pub fn bytes_per_particle_with(case: &Case, particles: usize, per_cell: Option<usize>) -> Result<usize, String> {
    let grid = crate::grid_for(case)?;
    let per_cell = per_cell.unwrap_or_else(|| crate::compile::table_bins(&grid));
    Ok(allocated_per_particle(
        gpu_buffers(case),
        info_words(case, particles as u64),
        case.boundary.is_mdbc(),
        particles,
        particles,
        grid.cell_count(),
        per_cell,
    ))
}

/// Words of a particle's id and kind on the GPU, its ids below `ids`: one where they share a
/// word ([`crate::compile::info_packed`]), else two.
fn info_words(case: &Case, ids: u64) -> usize {
    if crate::compile::info_packed(case, ids) {
        1
    } else {
        2
    }
}

/// The GPU's id-and-kind word of one where they share it (`Info` in step.cu): the kind in the
/// top two bits; the ids lie below 2^30 ([`crate::compile::info_packed`]).
fn pack_info(i: [u32; 2]) -> u32 {
    i[0] | (i[1] << 30)
}

/// [`pack_info`] undone.
fn unpack_info(w: u32) -> [u32; 2] {
    [w & 0x3fff_ffff, w >> 30]
}

/// Ids and kinds of the host's form packed in place ([`pack_info`]) into the first half of
/// `info`'s words, for an upload to a GPU that packs them; fails, naming it, on an id past
/// 2^30.
fn pack_infos(info: &mut [[u32; 2]]) -> Result<(), String> {
    if let Some(i) = info.iter().find(|i| i[0] >= 1 << 30) {
        return Err(format!("particle {} has an id past 2^30, which this case's kernels keep in 30 bits", i[0]));
    }
    let w: &mut [u32] = bytemuck::cast_slice_mut(info);
    // From the start: words 2k and 2k + 1 go to word k, at or before them.
    for k in 0..w.len() / 2 {
        w[k] = pack_info([w[2 * k], w[2 * k + 1]]);
    }
    Ok(())
}

/// Ids and kinds copied from a GPU that packs them ([`pack_info`]) into the first half of
/// `info`'s words, unpacked in place.
fn unpack_infos(info: &mut [[u32; 2]]) {
    let w: &mut [u32] = bytemuck::cast_slice_mut(info);
    // From the end: word k goes to words 2k and 2k + 1, at or after it.
    for k in (0..w.len() / 2).rev() {
        [w[2 * k], w[2 * k + 1]] = unpack_info(w[k]);
    }
}

/// Device bytes per particle held when the buffers (`set`, ids and kinds in `info_words`
/// words; `mdbc`: the case has mDBC's list of a word a particle and its second table) have
/// room for `cap` particles.
fn allocated_per_particle(
    set: BufferSet,
    info_words: usize,
    mdbc: bool,
    particles: usize,
    cap: usize,
    cells: usize,
    per_cell: usize,
) -> usize {
    let on_gpu = BufferSet(set.0 & !BufferId::Press.bit());
    let n = particles.max(1);
    // The cell table, and with mDBC the table that orders its list by ghost cell.
    let bins = per_cell * cells;
    let tables = 4 * table_words(bins, per_cell) + if mdbc { 4 * (bins + 2) } else { 0 };
    let list = if mdbc { 4 } else { 0 };
    let packed = if set.contains(BufferId::Info) { BufferId::Info.elem_bytes() - 4 * info_words } else { 0 };
    ((on_gpu.bytes_per_particle() + list - packed) * cap).div_ceil(n) + tables.div_ceil(n)
}

/// Whether `need` bytes fit in `free` (keeping 5 % spare); if not, the largest dp that would
/// fit, from particle counts scaling as dp^-dim.
pub fn fits(need: usize, free: usize, dp: f64, dim: usize) -> Result<(), String> {
    if need as f64 <= 0.95 * free as f64 {
        return Ok(());
    }
    let dp_fit = dp * (need as f64 / (0.9 * free as f64)).powf(1.0 / dim as f64);
    Err(format!(
        "the case needs {:.2} GB of GPU memory and {:.2} GB are free: the largest dp that fits is about {dp_fit:.4e} m (now {dp} m)",
        need as f64 / 1e9,
        free as f64 / 1e9
    ))
}

/// The scan levels for a cell table of `len` values.
fn scan_levels(stream: &Arc<CudaStream>, len: usize) -> Result<Vec<ScanLevel>, String> {
    let zeros = |len: usize| stream.alloc_zeros::<u32>(len).map_err(|e| fail("allocating the scan levels", e));
    let mut scan = Vec::new();
    let mut len = len;
    loop {
        let blocks = len.div_ceil(SCAN_BLOCK);
        let out = if scan.is_empty() { None } else { Some(zeros(len)?) };
        scan.push(ScanLevel { len, out, sums: zeros(blocks)? });
        if blocks == 1 {
            break;
        }
        len = blocks;
    }
    Ok(scan)
}

/// Exclusive scan of a table of counts in place, `scan` its levels ([`scan_levels`]): the
/// table's block totals (`scan_sum_kernel`), the totals scanned up the levels and added back
/// down (`scan_block_kernel`, `scan_add_kernel`), then the table's blocks scanned in place,
/// each from its offset: the table is read twice and written once.
fn scan_table(
    stream: &Arc<CudaStream>,
    k: &Kernels,
    table: &mut CudaSlice<u32>,
    scan: &mut [ScanLevel],
) -> Result<(), String> {
    let cfg_scan = |len: usize| LaunchConfig {
        grid_dim: (len.div_ceil(SCAN_BLOCK) as u32, 1, 1),
        block_dim: (SCAN_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let len_of =
        |len: usize| u32::try_from(len).map_err(|_| format!("a table of {len} values is beyond 32-bit indices"));
    let null = 0u64;
    let t = table.device_ptr(stream).0;
    let len0 = len_of(scan[0].len)?;
    if scan.len() == 1 {
        // One block: scanned in place at once.
        let mut b = stream.launch_builder(&k.scan_block);
        b.arg(&len0).arg(&t).arg(&t).arg(&mut scan[0].sums).arg(&null);
        // SAFETY: argument types match scan_block_kernel; `len` values in and out (it
        // allows them to alias), one block total, no offsets.
        return unsafe { b.launch(cfg_scan(scan[0].len)) }.map(|_| ()).map_err(|e| fail("scan_block_kernel", e));
    }
    let mut b = stream.launch_builder(&k.scan_sum);
    b.arg(&len0).arg(&t).arg(&mut scan[0].sums);
    // SAFETY: argument types match scan_sum_kernel; `len` values, a total for each block.
    unsafe { b.launch(cfg_scan(scan[0].len)) }.map_err(|e| fail("scan_sum_kernel", e))?;
    for l in 1..scan.len() {
        let (below, rest) = scan.split_at_mut(l);
        let lvl = &mut rest[0];
        let len = len_of(lvl.len)?;
        let mut b = stream.launch_builder(&k.scan_block);
        b.arg(&len).arg(&below[l - 1].sums).arg(lvl.out.as_mut().expect("levels above 0 have an output"));
        b.arg(&mut lvl.sums).arg(&null);
        // SAFETY: argument types match scan_block_kernel; the level below's totals in, this
        // level's output and block totals out.
        unsafe { b.launch(cfg_scan(lvl.len)) }.map_err(|e| fail("scan_block_kernel", e))?;
    }
    for l in (1..scan.len() - 1).rev() {
        let (lo, hi) = scan.split_at_mut(l + 1);
        let offsets = hi[0].out.as_ref().expect("levels above 0 have an output");
        let len = len_of(lo[l].len)?;
        let mut b = stream.launch_builder(&k.scan_add);
        b.arg(&len).arg(lo[l].out.as_mut().expect("levels above 0 have an output")).arg(offsets);
        // SAFETY: argument types match scan_add_kernel; a block offset for each block.
        unsafe { b.launch(cfg_scan(lo[l].len)) }.map_err(|e| fail("scan_add_kernel", e))?;
    }
    let offsets = scan[1].out.as_ref().expect("levels above 0 have an output");
    let mut b = stream.launch_builder(&k.scan_block);
    b.arg(&len0).arg(&t).arg(&t).arg(&null).arg(offsets);
    // SAFETY: argument types match scan_block_kernel; `len` values in and out (it allows them
    // to alias), no totals, each block's offset from level 1.
    unsafe { b.launch(cfg_scan(scan[0].len)) }.map_err(|e| fail("scan_block_kernel", e))?;
    Ok(())
}

/// Page-locked host memory that the host reads and writes: without write-combining (cudarc's
/// default), which would make every host read uncached.
fn pinned(ctx: &Arc<CudaContext>, len: usize) -> Result<PinnedHostSlice<u32>, String> {
    // SAFETY: the contents are only read after a copy fills them.
    unsafe { ctx.alloc_pinned_with_flags::<u32>(len.max(4), 0) }.map_err(|e| fail("allocating pinned host memory", e))
}

/// Two timing events (a start and an end); None where they cannot be made, and the times
/// they would give are then not read.
fn timing_pair(ctx: &Arc<CudaContext>) -> Option<[CudaEvent; 2]> {
    let timed = || ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).ok();
    timed().zip(timed()).map(|(a, b)| [a, b])
}

/// Seconds between the two events of a [`timing_pair`] (the end reached), None where the
/// driver cannot say.
fn seconds_between([start, end]: &[CudaEvent; 2]) -> Option<f64> {
    start.elapsed_ms(end).ok().map(|ms| f64::from(ms) * 1e-3)
}

/// A buffer of `words` words holding the first `keep` words of `old`.
fn grown(stream: &Arc<CudaStream>, old: &CudaSlice<u32>, words: usize, keep: usize) -> Result<CudaSlice<u32>, String> {
    let mut new = stream.alloc_zeros::<u32>(words).map_err(|e| fail("growing the particle buffers", e))?;
    if keep > 0 {
        stream
            .memcpy_dtod(&old.slice(0..keep), &mut new.slice_mut(0..keep))
            .map_err(|e| fail("growing the particle buffers", e))?;
    }
    Ok(new)
}

impl CudaBackend {
    /// Compile the case's kernels for GPU `ordinal`, allocate every buffer (with headroom),
    /// upload the filled particles (all of a case, or the part a device owns: their ids are
    /// kept) and sort them as a device alone.
    pub fn new(case: &Case, filled: &Filled, ordinal: usize) -> Result<CudaBackend, String> {
        // The ids held (a part's: the case's may be more; alike on the devices of a test).
        let ids = filled.id.iter().max().map_or(0, |&m| m as u64 + 1);
        Self::load(case, ordinal, filled.len(), filled.len(), ids, None, |put| put(filled))
    }

    /// As [`CudaBackend::streamed`] for device `me` of a team cut by `map`, its `n`
    /// particles handed over in parts by `fill` (slabs of its layers: the host never holds
    /// its whole share), `layer` the most particles of one cell layer in or next to its
    /// slice: its buffers have the team's headroom ([`team_headroom`]) from the start, so the
    /// first rebuild, which brings the neighbours' copies, does not grow them (a growth holds
    /// a buffer's old and new allocations at once), and its cell table covers its window
    /// only. `ids`: the case's particles (their ids lie below it).
    #[allow(clippy::too_many_arguments)]
    pub fn streamed_in_team(
        case: &Case,
        ordinal: usize,
        n: usize,
        ids: u64,
        layer: usize,
        map: &SliceMap,
        me: usize,
        fill: impl FnOnce(&mut dyn FnMut(&Filled) -> Result<(), String>) -> Result<(), String>,
    ) -> Result<CudaBackend, String> {
        let headroom = headroom_in(map, me, n, layer);
        let mut be = Self::load(case, ordinal, n, n + headroom, ids, Some((map, me)), fill)?;
        be.headroom = Some(headroom);
        Ok(be)
    }

    /// As [`CudaBackend::new`] for `n` particles that `fill` hands over in parts, in any
    /// order (each part's particles are uploaded and dropped by the caller; the first sort
    /// orders them by cell, kind and id, so the device holds what one whole fill gives, bit
    /// for bit): how one GPU takes a case larger than the host could hold at once
    /// (`surge_runtime::device`, slabs of cell layers). Fails when the parts do not add up
    /// to `n`.
    pub fn streamed(
        case: &Case,
        ordinal: usize,
        n: usize,
        fill: impl FnOnce(&mut dyn FnMut(&Filled) -> Result<(), String>) -> Result<(), String>,
    ) -> Result<CudaBackend, String> {
        // Exactly the particles (the whole case's: their ids lie below n): alone, a device
        // never holds more.
        Self::load(case, ordinal, n, n, n as u64, None, fill)
    }

    /// [`CudaBackend::streamed`] with buffers for `cap >= n` particles whose ids lie below
    /// `ids`.
    fn load(
        case: &Case,
        ordinal: usize,
        n: usize,
        cap: usize,
        ids: u64,
        team: Option<(&SliceMap, usize)>,
        fill: impl FnOnce(&mut dyn FnMut(&Filled) -> Result<(), String>) -> Result<(), String>,
    ) -> Result<CudaBackend, String> {
        let gpus = crate::probe::gpus()?;
        let gpu = gpus.get(ordinal).ok_or_else(|| format!("there is no GPU {ordinal}: {} visible", gpus.len()))?;
        crate::probe::nvrtc_version()?;
        let whole = cuda_grid(case)?;
        let cap = cap.max(n).max(1);
        // A device alone takes the whole grid; one of a team (`team`: the team's map and its
        // number in it) its window from the start, so its cell table is never the whole
        // grid's (at load it was: most of a team device's memory there, 22-27 bytes a
        // particle of a two-device team's 150).
        let single = SliceMap::single(whole.layers(), whole.reach);
        let (map, me) = team.unwrap_or((&single, 0));
        let (wl, wh) = map.window(me);
        let win = whole.windowed(wl, wh);
        let mut per_cell = crate::compile::table_bins(&whole);
        let mut bins = per_cell * win.cell_count();
        // Sort keys (the cell in the window, and `bins` for the dropped) and the cell table's
        // indices are 32-bit, and so is a cell word ([`cell_word`]) on the whole grid.
        if whole.cell_count() >= u32::MAX as usize {
            return Err(format!(
                "the grid has {} cells: the GPU numbers at most {} (a coarser dp or a smaller domain)",
                whole.cell_count(),
                u32::MAX as usize - 1
            ));
        }
        if bins + 2 > u32::MAX as usize {
            return Err(format!(
                "the grid has {} cells{}: the GPU's cell table holds at most {} (a coarser dp, a smaller domain{})",
                win.cell_count(),
                if team.is_some() { " in this device's slice" } else { "" },
                u32::MAX as usize - 2,
                if team.is_some() { " or more GPUs" } else { ", or several GPUs" }
            ));
        }
        let buffers = gpu_buffers(case);
        let ctx = CudaContext::new(ordinal).map_err(|e| fail("creating the context", e))?;
        let (free, _) = ctx.mem_get_info().map_err(|e| fail("reading free memory", e))?;
        let info_words = info_words(case, ids);
        let need_with = |per_cell: usize| {
            allocated_per_particle(buffers, info_words, case.boundary.is_mdbc(), n, cap, win.cell_count(), per_cell)
                * n.max(1)
                + (1 << 20)
        };
        // A device whose particles do not fit with two bins a cell takes one (5 bytes a cell
        // instead of 8; the same order, so the same results), and a case that fits neither
        // way is refused with the largest dp that fits with one: a billion particles on one
        // H100 need it. Devices of a team may differ: the table is the device's own.
        let (dp, dim) = (case.dp, case.dim);
        let compact = per_cell == 2 && fits(need_with(2), free, dp, dim).is_err();
        if compact {
            (per_cell, bins) = (1, win.cell_count());
        }
        fits(need_with(per_cell), free, dp, dim).map_err(|e| format!("GPU {ordinal} ({}): {e}", gpu.name))?;
        let t0 = std::time::Instant::now();
        let mut defs = defines(case, &whole, ids);
        defs.insert("TABLE_BINS", per_cell.to_string());
        let compiled = compile(&defs, arch_for(gpu.compute_capability))?;
        let compile_note = format!(
            "kernels for {} {} in {:.2} s, neighbour traversal {}{}",
            arch_for(gpu.compute_capability),
            if compiled.cached { "loaded from the cache" } else { "compiled by NVRTC" },
            t0.elapsed().as_secs_f64(),
            traversal_note(case, &whole),
            if compact { ", a cell table of one bin a cell (two do not fit the GPU)" } else { "" }
        );
        let module = ctx.load_module(compiled.ptx.into()).map_err(|e| fail("loading the kernels", e))?;
        let f = |name: &str| module.load_function(name).map_err(|e| fail(&format!("loading {name}"), e));
        let k = Kernels {
            rekey: f("rekey_kernel")?,
            key_sort: f("key_sort_kernel")?,
            classify: f("classify_kernel")?,
            histogram: f("histogram_kernel")?,
            scan_sum: f("scan_sum_kernel")?,
            scan_block: f("scan_block_kernel")?,
            scan_add: f("scan_add_kernel")?,
            scatter: f("scatter_kernel")?,
            order_bins: f("order_bins_kernel")?,
            gather16: f("gather16_kernel")?,
            gather8: f("gather8_kernel")?,
            gather4: f("gather4_kernel")?,
            forces: f("forces_kernel")?,
            forces_block: match crate::compile::traversal(case, &whole) {
                surge_core::config::Traversal::Cta => CTA_BLOCK,
                _ => BLOCK,
            },
            mdbc: if case.boundary.is_mdbc() { Some(f("mdbc_kernel")?) } else { None },
            mdbc_list: if case.boundary.is_mdbc() { Some(f("mdbc_list_kernel")?) } else { None },
            mdbc_ghost_key: if case.boundary.is_mdbc() { Some(f("mdbc_ghost_key_kernel")?) } else { None },
            mdbc_fix: if case.boundary.is_mdbc() { Some(f("mdbc_fix_kernel")?) } else { None },
            update: f("update_kernel")?,
            dt: f("dt_kernel")?,
            gauge_sums: f("gauge_sums_kernel")?,
            front: f("front_kernel")?,
            boundary_loads: f("boundary_loads_kernel")?,
            body_loads: f("body_loads_kernel")?,
            open: if case.open.is_empty() { None } else { Some(f("open_kernel")?) },
            open_rebuild: if case.open.is_empty() { None } else { Some(f("open_rebuild_kernel")?) },
            rotate_perm: f("rotate_perm_kernel")?,
        };
        let stream = ctx.default_stream();

        let zeros =
            |len: usize, what: &str| stream.alloc_zeros::<u32>(len).map_err(|e| fail(&format!("allocating {what}"), e));
        // A buffer of `per` words per particle for `cap` particles (at least `h`'s length),
        // starting with `h`.
        let up = |h: &[u32], per: usize, what: &str| -> Result<CudaSlice<u32>, String> {
            let mut d = zeros((per * cap).max(h.len()), what)?;
            if !h.is_empty() {
                stream
                    .memcpy_htod(h, &mut d.slice_mut(0..h.len()))
                    .map_err(|e| fail(&format!("uploading {what}"), e))?;
            }
            Ok(d)
        };
        let optional = |id: BufferId, what: &str| -> Result<Option<CudaSlice<u32>>, String> {
            if buffers.contains(id) {
                zeros(4 * cap, what).map(Some)
            } else {
                Ok(None)
            }
        };
        let max_points = case
            .gauges
            .iter()
            .map(|g| match g {
                Gauge::Pressure { .. } => 1,
                Gauge::WaterHeight { .. } => height_intervals(case) + 1,
                Gauge::Front { .. } | Gauge::Force { .. } => 0,
            })
            .sum::<usize>()
            .max(1);
        let event = || ctx.new_event(None).map_err(|e| fail("creating an event", e));
        // The mDBC list kept across rebuilds for walls at rest (list_mdbc).
        let mdbc_fixed = crate::compile::mdbc_in_vel(case)
            && std::env::var("SURGE_CUDA_MDBC_FIXED").map_or(true, |v| v.trim() != "0");
        let mut be = CudaBackend {
            name: format!("cuda:{ordinal} ({})", gpu.name),
            compile_note,
            n,
            cap,
            headroom: None,
            bins,
            per_cell,
            buffers,
            map: map.clone(),
            me: 0,
            own: 0..n,
            edges: [0..0, 0..0],
            mdbc_range: 0..0,
            mdbc_listed: zeros(1, "the mDBC list's length")?,
            mdbc_table: if case.boundary.is_mdbc() {
                Some((zeros(bins + 2, "the mDBC list's ghost-cell table")?, scan_levels(&stream, bins + 2)?))
            } else {
                None
            },
            pos: zeros(4 * cap, "positions")?,
            vel: zeros(4 * cap, "velocities")?,
            info: zeros(info_words * cap, "ids")?,
            info_words,
            vel_prev: zeros(4 * cap, "velocities")?,
            pos_prev: optional(BufferId::PosPrev, "step-start positions")?,
            wall: optional(BufferId::Wall, "wall normals")?,
            shift: optional(BufferId::Shift, "shifting sums")?,
            mdbc: optional(BufferId::Mdbc, "mDBC values")?,
            force: zeros(4 * cap, "forces")?,
            mdbc_list: if case.boundary.is_mdbc() { Some(zeros(cap, "the mDBC list")?) } else { None },
            mdbc_fixed,
            mdbc_fix_bad: if mdbc_fixed { Some(zeros(1, "the mDBC list's check")?) } else { None },
            mdbc_fixed_key: None,
            perm: zeros(cap, "permutation")?,
            dropping: None,
            rekey_unread: false,
            removed: 0,
            removed_for_density: 0,
            density_bounds: [f32::NEG_INFINITY, f32::INFINITY],
            spawned: 0,
            outflow: 0,
            time: 0.0,
            open_table: stream
                .alloc_zeros::<f64>(OPEN_HEAD + OPEN_ZONE * case.open.len())
                .map_err(|e| fail("allocating the open boundaries' table", e))?,
            open_table_host: Vec::new(),
            open_table_sent: Vec::new(),
            open_counters: zeros(4, "open boundary counters")?,
            cell_start: zeros(table_words(bins, per_cell), "cell starts")?,
            scan: scan_levels(&stream, bins + 2)?,
            stats: up(&STATS_INIT, 0, "stats")?,
            words_host: pinned(&ctx, 8)?,
            settled: event()?,
            dt_dev: zeros(4, "the time step")?,
            rebuild_marks: timing_pair(&ctx),
            rebuild_marked: 0,
            update_marks: timing_pair(&ctx),
            counters: zeros(4, "counters")?,
            dummy: zeros(4, "placeholder")?,
            dummy_out: zeros(4, "placeholder")?,
            moves: stream
                .alloc_zeros::<f64>(MOVE_LEN * case.moving_solids().max(1))
                .map_err(|e| fail("allocating the moving solids' table", e))?,
            nmoves: 0,
            host_pos: pinned(&ctx, 4 * cap.min(HOST_CHUNK))?,
            host_vel: pinned(&ctx, 4 * cap.min(HOST_CHUNK))?,
            host_info: pinned(&ctx, 2 * cap.min(HOST_CHUNK))?,
            edge_stage: [pinned(&ctx, 4)?, pinned(&ctx, 4)?],
            edge_done: Arc::new(event()?),
            edges_to_host: [true; 2],
            edges_staged: [false; 2],
            peer_out: [None, None],
            reached: Vec::new(),
            shared: [false; 2],
            ipc_out: [[None, None], [None, None]],
            ipc_turn: [0; 2],
            ipc_edges: [None, None],
            ipc_event: None,
            ipc_retired: Vec::new(),
            ipc_probe: None,
            imports: Imports::new(&ctx),
            copy_stage: [pinned(&ctx, 4)?, pinned(&ctx, 4)?],
            copy_done: [event()?, event()?],
            gauge_cell: zeros(4 * max_points, "gauge points")?,
            gauge_off: zeros(4 * max_points, "gauge points")?,
            gauge_out: stream.alloc_zeros::<f64>(2 * max_points).map_err(|e| fail("allocating gauge sums", e))?,
            front_out: stream.alloc_zeros::<u64>(1).map_err(|e| fail("allocating the front", e))?,
            loads_ids: zeros(2, "force gauge ids")?,
            loads_count: zeros(1, "force gauge counter")?,
            loads_out: zeros(12, "force gauge loads")?,
            body_table: stream
                .alloc_zeros::<f64>(8 + BODY_WORDS * case.bodies.len())
                .map_err(|e| fail("allocating the bodies' table", e))?,
            body_out: stream
                .alloc_zeros::<u64>(LOAD_LEN * case.bodies.len().max(1))
                .map_err(|e| fail("allocating the bodies' loads", e))?,
            body_table_host: Vec::new(),
            body_out_host: Vec::new(),
            case: Arc::new(case.clone()),
            consts: Constants::of(case),
            win,
            whole,
            ctx,
            stream,
            k,
        };
        let mut at = 0;
        fill(&mut |part: &Filled| {
            if at + part.len() > n {
                return Err(format!("the fill handed over more than the {n} particles counted"));
            }
            be.upload_filled(part, at)?;
            at += part.len();
            Ok(())
        })?;
        if at != n {
            return Err(format!("the fill handed over {at} particles, {n} were counted"));
        }
        // The first sort, over the window: a team's device drops the copies it would send
        // (its first rebuild in the team sends them).
        let mut out = [ParticleState::default(), ParticleState::default()];
        be.rebuild_begin(map, me, true, &mut out).map_err(|f| f.to_string())?;
        let empty = || ParticleState::empty(be.host_set(), &be.whole);
        let incoming = [empty(), empty()];
        be.rebuild_end(incoming).map_err(|f| f.to_string())?;
        Ok(be)
    }

    /// Upload filled particles to the particles `at..at + filled.len()` (positions as offset
    /// and cell word on the whole grid, the velocity one step back equal to the velocity), in
    /// host images of at most [`HOST_CHUNK`] particles.
    fn upload_filled(&mut self, filled: &Filled, at: usize) -> Result<(), String> {
        let with_wall = self.wall.is_some();
        for lo in (0..filled.len()).step_by(HOST_CHUNK) {
            let hi = filled.len().min(lo + HOST_CHUNK);
            let m = hi - lo;
            // Host images of the conserved buffers, as the CPU backend builds them.
            let (mut pos, mut vel, mut info) =
                (Vec::with_capacity(m), Vec::with_capacity(m), Vec::with_capacity(self.info_words * m));
            for i in lo..hi {
                let (c, off) = self.whole.locate(filled.pos[i]);
                let v = filled.vel[i];
                pos.push([off[0], off[1], off[2], f32::from_bits(cell_word(&self.whole, [c[0], c[1], c[2], 0]))]);
                vel.push([v[0] as f32, v[1] as f32, v[2] as f32, filled.rel_density[i]]);
                let id_kind = [filled.id[i], filled.kind[i] as u32];
                if self.info_words == 1 {
                    info.push(pack_info(id_kind));
                } else {
                    info.extend(id_kind);
                }
            }
            let put = |src: &[u32], dst: &mut CudaSlice<u32>, per: usize, stream: &Arc<CudaStream>| {
                stream
                    .memcpy_htod(src, &mut dst.slice_mut(per * (at + lo)..per * (at + hi)))
                    .map_err(|e| fail("uploading the filled particles", e))
            };
            let s = self.stream.clone();
            put(bytemuck::cast_slice(&pos), &mut self.pos, 4, &s)?;
            put(bytemuck::cast_slice(&vel), &mut self.vel, 4, &s)?;
            put(bytemuck::cast_slice(&vel), &mut self.vel_prev, 4, &s)?;
            put(&info, &mut self.info, self.info_words, &s)?;
            if with_wall {
                let wall = self.wall.as_mut().expect("checked");
                put(bytemuck::cast_slice(&filled.wall[lo..hi]), wall, 4, &s)?;
            }
        }
        Ok(())
    }

    /// How the kernels were obtained (NVRTC or cache) and how long it took.
    pub fn compile_note(&self) -> &str {
        &self.compile_note
    }

    /// Make the GPU's context current on the calling thread (a worker thread may drive a
    /// backend built elsewhere).
    fn bind(&self) -> Result<(), String> {
        self.ctx.bind_to_thread().map_err(|e| fail("binding the context to this thread", e))
    }

    fn reset_stats(&mut self) -> Result<(), String> {
        self.stream.memcpy_htod(&STATS_INIT, &mut self.stats).map_err(|e| fail("resetting the stats", e))
    }

    /// The stats of the kernels queued so far, once they are over.
    fn read_stats(&mut self, after: &str) -> Result<[u32; 8], String> {
        let v = [self.stats.slice(..)];
        read_words(&self.stream, &self.settled, &mut self.words_host, &v, after)
    }

    /// Wait on the host until the work queued on the stream so far is over: on an event
    /// recorded now, never `cuStreamSynchronize`; and a step's small reads go through pinned
    /// memory ([`read_words`]), not a copy to pageable memory behind the queued kernels
    /// (which blocks in the driver until they are over). With one thread per GPU in a
    /// process, waits of those two kinds for the inner forces left 1.8-3.7 % of a step
    /// exposed in the copy phase that follows (4 x H200; 0.1-0.4 % with event waits, as with
    /// one process per GPU: docs/PERFORMANCE.md), presumably as the driver's entry points
    /// share locks between the contexts of a process (cudarc#169, pytorch#24963).
    fn settle(&self, what: &str) -> Result<(), String> {
        settle(&self.stream, &self.settled, what)
    }

    /// The held particle with global id `id`, for a failure message; `reason` None: it left
    /// the domain or has a non-finite position (as the CPU's rekey says).
    fn bad_particle(&mut self, id: u32, reason: Option<&'static str>) -> Result<BadParticle, String> {
        let mut snap = Snapshot::default();
        self.snapshot_range(0..self.n, &mut snap)?;
        let i = snap.id.iter().position(|&x| x == id).ok_or_else(|| format!("failed particle {id} not found"))?;
        let pos = snap.pos[i];
        let finite = pos.iter().all(|x| x.is_finite());
        // A fluid particle whose density lies outside its range failed for that (the rekey
        // tests it on the stored relative density; this one is recomputed from the density).
        let d = snap.rho[i] / self.case.rho0 as f32 - 1.0;
        let dense = snap.kind[i] == Kind::Fluid as u8 && Case::density_out(self.density_bounds, d);
        let reason = reason.unwrap_or(match (finite, dense) {
            (false, _) => "has a non-finite position",
            (true, false) => LEFT_DOMAIN,
            (true, true) => DENSITY_OUT,
        });
        Ok(BadParticle { id, pos, reason, solid: None })
    }

    /// First particle of each of the six layers `ls[k]` of the window, from the cell table,
    /// and the sort's `STAT_CELL_FLUID` (at the host: one word each, one wait).
    fn layer_starts(&mut self, ls: [i32; 6]) -> Result<([usize; 6], u32), String> {
        let at = ls.map(|l| self.per_cell * self.win.layer_start(l));
        let (table, stats) = (&self.cell_start, &self.stats);
        let v: [_; 7] = std::array::from_fn(|k| match at.get(k) {
            Some(&a) => table.slice(a..a + 1),
            None => stats.slice(STAT_CELL_FLUID..STAT_CELL_FLUID + 1),
        });
        let w = read_words(&self.stream, &self.settled, &mut self.words_host, &v, "reading the cell table")?;
        Ok((std::array::from_fn(|j| w[j] as usize), w[6]))
    }

    /// The copies from a side.
    fn copies(&self, side: Side) -> Range<usize> {
        match side {
            Side::Left => 0..self.own.start,
            Side::Right => self.own.end..self.n,
        }
    }

    /// Force values per particle in edge exchanges: the force, and the shifting sums when
    /// shifting is on.
    fn values_per_particle(&self) -> usize {
        if self.shift.is_some() {
            2
        } else {
            1
        }
    }

    /// Upload the open boundaries' table at the backend's time (twin of the values
    /// [`surge_core::open::OpenZone`] gives the CPU's pass).
    fn upload_open_table(&mut self) -> Result<(), String> {
        let (case, g, c) = (&self.case, &self.whole, &self.consts);
        let t = &mut self.open_table_host;
        t.clear();
        let gmag = case.body_force.iter().map(|x| x * x).sum::<f64>().sqrt();
        t.extend(g.origin);
        t.extend(g.cell);
        t.extend([case.dp, case.open_columns as f64, gmag]);
        for z in &case.open {
            t.extend([f64::from(u8::from(z.inlet)), z.axis as f64, z.sign, z.plane, z.thickness(case.dp)]);
            t.extend(z.min);
            t.extend(z.max);
            let profile = f64::from(u8::from(z.profile == surge_core::open::Profile::Parabolic));
            t.extend([z.speed(self.time).unwrap_or(f64::NAN), profile, z.profile_mean]);
            let (kind, value) = match z.pressure {
                OpenPressure::Extrapolated => (0.0, 0.0),
                OpenPressure::Fixed(p) => (1.0, c.rel_density(p as f32) as f64),
                OpenPressure::Hydrostatic(level) => (2.0, level),
            };
            t.extend([kind, value, z.layers as f64]);
        }
        debug_assert_eq!(t.len(), OPEN_HEAD + OPEN_ZONE * case.open.len());
        // Only when it changed (a speed that varies in time): the copy waits for the stream.
        // Bits compared: an extrapolated speed is NaN.
        if t.iter().map(|x| x.to_bits()).eq(self.open_table_sent.iter().map(|x| x.to_bits())) {
            return Ok(());
        }
        self.open_table_sent.clone_from(t);
        self.stream
            .memcpy_htod(t.as_slice(), &mut self.open_table)
            .map_err(|e| fail("uploading the open boundaries", e))
    }

    /// Before each force pass: the buffer particles' values (`open_kernel`, twin of the
    /// CPU's `open::pass`), over the particles the mDBC pass would cover.
    fn launch_open(&mut self) -> Result<(), String> {
        if self.k.open.is_none() || self.mdbc_range.is_empty() {
            return Ok(());
        }
        self.upload_open_table()?;
        let kernel = self.k.open.as_ref().expect("compiled for cases with open boundaries");
        let (first, count) = (self.mdbc_range.start as i32, self.mdbc_range.len() as i32);
        let (wlo, whi) = self.win.window;
        let nz = self.case.open.len() as i32;
        let mut b = self.stream.launch_builder(kernel);
        b.arg(&first).arg(&count).arg(&wlo).arg(&whi).arg(&self.pos).arg(&mut self.vel).arg(&self.info);
        b.arg(&self.cell_start).arg(&self.open_table).arg(&nz);
        // SAFETY: argument types match open_kernel; first + count <= n.
        unsafe { b.launch(cfg(count as usize)) }.map_err(|e| fail("open_kernel", e))?;
        Ok(())
    }

    /// A rebuild's step at the open boundaries' planes (`open_rebuild_kernel`, twin of the
    /// CPU's `open::rebuild`): kinds change in place, outflowing particles are marked for
    /// the sort to drop (their count is returned), and the particles the inlets make are
    /// appended and moved to the end of the owned ones.
    fn open_rebuild(&mut self) -> Result<usize, Failure> {
        let what = "open_rebuild_kernel";
        self.upload_open_table()?;
        let own = self.own.clone();
        let (first, count, nz) = (own.start as i32, own.len() as i32, self.case.open.len() as i32);
        let has_wall = i32::from(self.wall.is_some());
        let init = [0u32, 0, u32::MAX, 0];
        let mut spawn = 0;
        for write in [0i32, 1] {
            if write == 1 {
                self.ensure_capacity(self.n + spawn)?;
            }
            self.stream.memcpy_htod(&init, &mut self.open_counters).map_err(|e| fail(what, e))?;
            let n = self.n as i32;
            let kernel = self.k.open_rebuild.as_ref().expect("compiled for cases with open boundaries");
            let mut b = self.stream.launch_builder(kernel);
            b.arg(&first).arg(&count).arg(&n).arg(&write).arg(&mut self.pos).arg(&mut self.vel);
            b.arg(&mut self.info).arg(&mut self.vel_prev).arg(&has_wall);
            match self.wall.as_mut() {
                Some(w) => b.arg(w),
                None => b.arg(&mut self.dummy_out),
            };
            b.arg(&self.open_table).arg(&nz).arg(&mut self.open_counters);
            // SAFETY: argument types match open_rebuild_kernel; first + count <= n, and the
            // writing pass has room for the n + spawn particles it makes.
            unsafe { b.launch(cfg(own.len())) }.map_err(|e| fail(what, e))?;
            let c =
                read_words(&self.stream, &self.settled, &mut self.words_host, &[self.open_counters.slice(..)], what)?;
            if write == 0 {
                spawn = c[0] as usize;
                continue;
            }
            if c[0] as usize != spawn {
                return Err(Failure::Device(format!("{what}: counted {spawn} new particles, made {}", c[0])));
            }
            if c[2] != u32::MAX {
                return Err(Failure::Device(format!(
                    "an inlet: particle {} would make a new particle with an id past 2^32; the run has outgrown the \
                     ids (fewer columns or a shorter run)",
                    c[2]
                )));
            }
            self.spawned += spawn as u64;
            self.outflow += c[1] as u64;
            // Behind copies from the right they must move before them; a device without
            // them (alone, or the last slice) holds them at the end of its owned ones already.
            if spawn > 0 && own.end == self.n {
                self.n += spawn;
                self.own = own.start..own.end + spawn;
            } else if spawn > 0 {
                let (n, end, s) = (self.n as i32, own.end as i32, spawn as i32);
                let mut b = self.stream.launch_builder(&self.k.rotate_perm);
                b.arg(&n).arg(&end).arg(&s).arg(&mut self.perm);
                // SAFETY: argument types match rotate_perm_kernel; perm holds cap >= n + s.
                unsafe { b.launch(cfg(self.n + spawn)) }.map_err(|e| fail("rotate_perm_kernel", e))?;
                self.permute(self.n + spawn)?;
                self.n += spawn;
                self.own = own.start..own.end + spawn;
            }
            return Ok(c[1] as usize);
        }
        unreachable!("the writing pass returns")
    }

    /// Make room for `need` particles, keeping the `n` held (all buffers, contents
    /// preserved). Waits for the device first (pinned buffers may be freed).
    fn ensure_capacity(&mut self, need: usize) -> Result<(), String> {
        if need <= self.cap {
            return Ok(());
        }
        let cap = match self.headroom {
            Some(h) => need + h,
            None => capacity_for(need),
        };
        self.settle("growing the particle buffers")?;
        // Each buffer's new allocation is made before its old one is freed, one buffer after
        // the other: at the last, the new set and one old buffer (16 bytes a particle at most)
        // are held. Refuse a growth the GPU cannot hold with a message, before an allocation
        // fails.
        let on_gpu = BufferSet(self.buffers.0 & !BufferId::Press.bit()).bytes_per_particle();
        let more = on_gpu * (cap - self.cap) + 16 * self.cap;
        let (free, _) = self.ctx.mem_get_info().map_err(|e| fail("reading free memory", e))?;
        if more as f64 > 0.95 * free as f64 {
            return Err(format!(
                "{}: holding {need} particles (inlets and migration add to them) needs {:.2} GB more GPU memory and \
                 {:.2} GB are free: the run stops here (a larger dp, fewer or narrower inlets, or more GPUs)",
                self.name,
                more as f64 / 1e9,
                free as f64 / 1e9
            ));
        }
        let (s, n) = (&self.stream, self.n);
        for (buf, per) in [
            (&mut self.pos, 4),
            (&mut self.vel, 4),
            (&mut self.info, self.info_words),
            (&mut self.vel_prev, 4),
            (&mut self.force, 4),
            (&mut self.perm, 1),
        ] {
            *buf = grown(s, buf, per * cap, per * n)?;
        }
        for buf in
            [self.pos_prev.as_mut(), self.wall.as_mut(), self.shift.as_mut(), self.mdbc.as_mut()].into_iter().flatten()
        {
            *buf = grown(s, buf, 4 * cap, 4 * n)?;
        }
        // The list is made anew at the next rebuild.
        if let Some(l) = self.mdbc_list.as_mut() {
            *l = grown(s, l, cap, 0)?;
        }
        self.mdbc_fixed_key = None;
        let chunk = cap.min(HOST_CHUNK);
        self.host_pos = pinned(&self.ctx, 4 * chunk)?;
        self.host_vel = pinned(&self.ctx, 4 * chunk)?;
        self.host_info = pinned(&self.ctx, 2 * chunk)?;
        self.cap = cap;
        Ok(())
    }

    /// What the re-key left in the statistics `s`: fails with the particle it could not
    /// place; counts those it removed (returned).
    fn rekey_found(&mut self, s: &[u32; 8]) -> Result<usize, Failure> {
        if s[STAT_BAD_ID] != u32::MAX {
            return Err(Failure::Particle(self.bad_particle(s[STAT_BAD_ID], None)?));
        }
        self.removed += u64::from(s[STAT_REMOVED]);
        self.removed_for_density += u64::from(s[STAT_DENSITY_OUT]);
        Ok(s[STAT_REMOVED] as usize)
    }

    /// First part of a rebuild's first half: re-key the owned particles (when `rekey`) and
    /// list which stay (in this device's new window: its slice, and copies of particles it
    /// owned until now) and which go to each neighbour's window. Returns how many are kept,
    /// and go left (listed in `perm[..left]`) and right (`perm[m - right..m]`, m owned). A
    /// device alone does not wait for the re-key: [`Self::sort`] reads what it found (the
    /// particles it removed are not yet counted out of the kept ones).
    fn classify(&mut self, map: &SliceMap, me: usize, rekey: bool) -> Result<(usize, usize, usize), Failure> {
        // Open boundaries first: kinds change at the planes, outflow is marked, and the new
        // inlet particles join the owned ones.
        let mut removed = 0;
        self.rekey_unread = false;
        if rekey && !self.case.open.is_empty() && !self.own.is_empty() {
            removed = self.open_rebuild()?;
        }
        let own = self.own.clone();
        let (first, count) = (own.start as i32, own.len() as i32);
        // A device alone keeps every particle where it is (its window is the whole grid) but
        // those removed, which the sort drops.
        let alone = map.devices() == 1 && own == (0..self.n);
        if rekey && count > 0 {
            self.reset_stats()?;
            {
                let remove = (self.case.on_exit == OnExit::Remove) as i32;
                let [dlo, dhi] = self.density_bounds;
                let mut b = self.stream.launch_builder(&self.k.rekey);
                b.arg(&first).arg(&count).arg(&remove).arg(&dlo).arg(&dhi);
                b.arg(&mut self.pos).arg(&self.vel).arg(&self.info).arg(&mut self.stats);
                // SAFETY: argument types match rekey_kernel; first + count <= n.
                unsafe { b.launch(cfg(own.len())) }.map_err(|e| fail("rekey_kernel", e))?;
            }
            if alone {
                // No wait here: the sort reads these statistics with its counts.
                self.rekey_unread = true;
                return Ok((own.len() - removed, 0, 0));
            }
            let s = self.read_stats("rekey_kernel")?;
            removed += self.rekey_found(&s)?;
        }
        if alone {
            return Ok((own.len() - removed, 0, 0));
        }
        let (lo, hi) = map.window(me);
        let window = |s: Side| map.neighbour(me, s).map_or((0, 0), |d| map.window(d));
        let ((llo, lhi), (rlo, rhi)) = (window(Side::Left), window(Side::Right));
        let what = "classify_kernel";
        self.stream.memset_zeros(&mut self.counters).map_err(|e| fail(what, e))?;
        if count > 0 {
            let mut b = self.stream.launch_builder(&self.k.classify);
            b.arg(&first).arg(&count).arg(&lo).arg(&hi).arg(&llo).arg(&lhi).arg(&rlo).arg(&rhi);
            b.arg(&self.pos).arg(&mut self.perm).arg(&mut self.counters);
            // SAFETY: argument types match classify_kernel; the two send lists share `perm`
            // from both ends and never overlap, so they hold count <= cap indices.
            unsafe { b.launch(cfg(own.len())) }.map_err(|e| fail(what, e))?;
        }
        let c = read_words(&self.stream, &self.settled, &mut self.words_host, &[self.counters.slice(..)], what)?;
        let m = own.len();
        let (kept, left, right) = (m.wrapping_sub(c[0] as usize), c[1] as usize, c[2] as usize);
        if left + right > m || kept > m {
            return Err(Failure::Device(format!(
                "{what}: {kept} kept, {left} and {right} to send of {m} owned particles"
            )));
        }
        Ok((kept, left, right))
    }

    /// Last part of a rebuild's first half, once the particles to send are gathered: the new
    /// map taken. The particles stay where they are, the neighbours' come after them, and
    /// the sort drops the copies and the owned particles that left the window
    /// ([`Dropping`]): one reordering of the buffers per rebuild, as for a device alone.
    fn finish_begin(&mut self, map: &SliceMap, me: usize, kept: usize) -> Result<(), Failure> {
        let dropped = self.n - kept;
        self.dropping = (dropped > 0).then(|| Dropping { held: self.n, own: self.own.clone(), dropped });
        let (wl, wh) = map.window(me);
        self.win = self.whole.windowed(wl, wh);
        self.map = map.clone();
        self.me = me;
        self.own = 0..0;
        self.edges = [0..0, 0..0];
        Ok(())
    }

    /// Last part of a rebuild, once every particle of the window is held: sort, and find the
    /// blocks (copies, edges, inner).
    fn finish_end(&mut self) -> Result<(), Failure> {
        let bins = self.per_cell * self.win.cell_count();
        if bins != self.bins {
            self.settle("resizing the cell table")?;
            self.cell_start = self
                .stream
                .alloc_zeros::<u32>(table_words(bins, self.per_cell))
                .map_err(|e| fail("allocating the cell table", e))?;
            self.scan = scan_levels(&self.stream, bins + 2)?;
            if self.mdbc_table.is_some() {
                let table =
                    self.stream.alloc_zeros::<u32>(bins + 2).map_err(|e| fail("allocating the mDBC table", e))?;
                self.mdbc_table = Some((table, scan_levels(&self.stream, bins + 2)?));
            }
            self.bins = bins;
        }
        self.sort()?;
        let (lo, hi) = self.map.owned(self.me);
        let halo = self.map.halo;
        let r = self.win.reach;
        // A device alone holds its whole slice and nothing else: every particle it keeps is
        // owned and may be listed for mDBC, and with two bins a cell no cell's fluid count
        // can overflow, so it reads nothing back (a wait on the host, 6-8 us of an idle GPU
        // at each rebuild: docs/PERFORMANCE.md, "A host round trip's cost").
        let alone = self.map.devices() == 1 && self.per_cell == 2;
        let ([own_start, left_end, right_start, own_end, mdbc_start, mdbc_end], most) = if alone {
            ([0, 0, self.n, self.n, 0, self.n], 0)
        } else {
            self.layer_starts([lo, lo + halo, hi - halo, hi, lo - r, hi + r])?
        };
        if most > 0 {
            return Err(Failure::Device(format!(
                "{}: a cell of the grid holds {most} fluid particles, the cell table counts at most 255 \
                 (the fluid is compressed far beyond its density, or h/dp is too large)",
                self.name
            )));
        }
        self.own = own_start..own_end;
        self.mdbc_range = mdbc_start..mdbc_end;
        self.list_mdbc()?;
        self.edges = [
            match self.map.neighbour(self.me, Side::Left) {
                Some(_) => own_start..left_end,
                None => own_start..own_start,
            },
            match self.map.neighbour(self.me, Side::Right) {
                Some(_) => right_start..own_end,
                None => own_end..own_end,
            },
        ];
        self.size_stages()?;
        // The rebuild's last work queued: its end, for the device's own time of it.
        if let (1, Some([_, end])) = (self.rebuild_marked, &self.rebuild_marks) {
            self.rebuild_marked = if end.record(&self.stream).is_ok() { 2 } else { 0 };
        }
        Ok(())
    }

    /// Fails when a neighbour still holds a block of this device's edge values: they are
    /// about to be rewritten, and it may not have copied them yet (see [`crate::peer`]).
    fn edges_released(&self) -> Result<(), Failure> {
        if Arc::strong_count(&self.edge_done) > 1 {
            return Err(Failure::Device(format!(
                "{}: a neighbour still holds the edge force values of the last pass while they are rewritten \
                 (the exchange order is broken)",
                self.name
            )));
        }
        Ok(())
    }

    /// Give this GPU direct access to the memory of `other`'s GPU (and the other way round),
    /// once per GPU, where the hardware allows it ([`peer::reach`]); returns whether it has
    /// it (true for its own GPU).
    fn reach(&mut self, other: &Arc<CudaContext>) -> Result<bool, String> {
        let o = other.ordinal();
        if o == self.ctx.ordinal() {
            return Ok(true);
        }
        if let Some(&(_, mapped)) = self.reached.iter().find(|r| r.0 == o) {
            return Ok(mapped);
        }
        let mapped = peer::reach(&self.ctx, other)
            .map_err(|e| fail(&format!("enabling peer access between GPUs {} and {o}", self.ctx.ordinal()), e))?;
        self.reached.push((o, mapped));
        Ok(mapped)
    }

    /// Queue gathers of the conserved buffers of the particles listed in `perm[list]` to the
    /// device memory at `dst`, one buffer after the other ([`segment_words`] each, in
    /// [`BufferSet::iter`] order); returns the buffer set.
    ///
    /// # Safety
    /// `dst` must hold [`Self::staging_words`] words for `list.len()` particles and stay allocated
    /// until the gathers are over.
    unsafe fn gather_to(&self, list: Range<usize>, dst: sys::CUdeviceptr) -> Result<BufferSet, String> {
        let what = "copying particles for a neighbour's GPU";
        let want = self.buffers.and(BufferSet::conserved());
        let m = list.len();
        if m == 0 {
            return Ok(want);
        }
        let idx = self.perm.slice(list);
        let mut at = 0;
        for id in want.iter() {
            let (src, per) = (self.conserved(id)?, self.words(id));
            // SAFETY: the list holds m indices below n, and `dst` holds `per * m` words at
            // `at` (the caller's promise).
            unsafe { gather(&self.stream, &self.k, &idx, src, per, dst + 4 * at as u64) }.map_err(|e| fail(what, e))?;
            at += segment_words(per, m);
        }
        Ok(want)
    }

    /// Words a staging buffer needs for `m` particles of this device's conserved buffers.
    fn staging_words(&self, m: usize) -> usize {
        self.buffers.and(BufferSet::conserved()).iter().map(|id| segment_words(self.words(id), m)).sum()
    }

    /// Gather the particles listed in `perm[list]` into this device's staging buffer for the
    /// neighbour (a GPU of this process) on `side` (reused when no neighbour holds it any
    /// more, else a new one); record its `ready` event after the gathers (no wait).
    fn gather_peer(&mut self, side: Side, list: Range<usize>) -> Result<DeviceBlock, String> {
        let what = "copying particles for a neighbour's GPU";
        let m = list.len();
        let words = self.staging_words(m);
        let slot = &mut self.peer_out[side as usize];
        let reusable = slot.as_mut().and_then(Arc::get_mut).is_some_and(|st| st.buf.len() >= words);
        if !reusable {
            *slot = Some(Arc::new(Staging::new(&self.stream, capacity_for(words)).map_err(|e| fail(what, e))?));
        }
        let held = self.peer_out[side as usize].clone().expect("a staging buffer was just made");
        let dst = held.buf.device_ptr(&self.stream).0;
        // SAFETY: the buffer holds `words` words; this device holds it (by `held`) until the
        // gathers are queued, and no neighbour holds it (reusable or new).
        let buffers = unsafe { self.gather_to(list, dst) }?;
        held.ready.record(&self.stream).map_err(|e| fail(what, e))?;
        Ok(DeviceBlock::Local(Box::new(RebuildBlock { ctx: self.ctx.clone(), staging: held, count: m, buffers })))
    }

    /// Gather the particles listed in `perm[list]` for the neighbour (a GPU of another rank of
    /// this node) on `side` into this side's exported buffer whose turn it is, and wait for
    /// the gathers (see [`crate::ipc`]).
    fn gather_shared(&mut self, side: Side, list: Range<usize>) -> Result<DeviceBlock, String> {
        let what = "copying particles for a neighbouring rank's GPU";
        let m = list.len();
        let bytes = 4 * self.staging_words(m);
        let (s, turn) = (side as usize, self.ipc_turn[side as usize]);
        self.ipc_turn[s] = 1 - turn;
        if self.ipc_out[s][turn].as_ref().is_none_or(|b| b.bytes < bytes) {
            let new = Exported::new(&self.ctx, capacity_for(bytes)).map_err(|e| fail(what, e))?;
            if let Some(old) = self.ipc_out[s][turn].replace(new) {
                self.ipc_retired.push(old);
            }
        }
        let buf = self.ipc_out[s][turn].as_ref().expect("an exported buffer was just made");
        let (dst, mem) = (buf.ptr, buf.handle.clone());
        // SAFETY: the buffer holds `bytes` bytes and lives until the backend is dropped; the
        // neighbour is done with it (two rebuilds ago, see `crate::ipc`).
        let buffers = unsafe { self.gather_to(list, dst) }?;
        self.settle(what)?;
        Ok(DeviceBlock::Shared(Shared::Particles { mem, count: m as u64, buffers: buffers.0 }.to_bytes()))
    }

    /// Queue the copies of a neighbour's particles after the `n` held, behind its sender's
    /// gathers; `n` counts them. Room must exist.
    fn take_particles(&mut self, b: &Incoming) -> Result<(), Failure> {
        let what = "copying particles from a neighbour's GPU";
        let (m, set) = (b.count(), b.buffers());
        if m == 0 {
            return Ok(());
        }
        let (src_ctx, src, mapped) = match b {
            Incoming::Local(b) => {
                let mapped = self.reach(&b.ctx)?;
                self.stream.wait(&b.staging.ready).map_err(|e| fail(what, e))?;
                (b.ctx.clone(), b.staging.buf.device_ptr(b.staging.buf.stream()).0, mapped)
            }
            // Mapped into this context; the sender synchronised after its gathers.
            Incoming::Shared { src, .. } => (self.ctx.clone(), *src, true),
        };
        let (stream, n) = (&self.stream, self.n);
        let mut at = 0;
        for id in set.iter() {
            let per = self.words(id);
            let dst = self.conserved(id)?.device_ptr(stream).0 + 4 * (per * n) as u64;
            // SAFETY: the source holds `per * m` words at `at` (it holds this buffer's
            // words there); room for n + m particles exists; the source is not rewritten
            // before the copy is over (see `crate::peer` and `crate::ipc`).
            unsafe { peer::copy(stream, dst, &src_ctx, src + 4 * at as u64, 4 * per * m, mapped) }
                .map_err(|e| fail(what, e))?;
            at += segment_words(per, m);
        }
        self.n += m;
        Ok(())
    }

    /// Gather the conserved buffers of the particles listed in `perm[list]` into a state on
    /// the whole grid (through the force buffer), in the host's form ([`to_host_pos`]).
    fn gather_out(&self, list: Range<usize>) -> Result<ParticleState, String> {
        let what = "copying particles for a neighbour";
        let want = self.buffers.and(BufferSet::conserved());
        let m = list.len();
        if m == 0 {
            return Ok(ParticleState::empty(self.host_set(), &self.whole));
        }
        // Host buffers kept from rebuild to rebuild: fresh ones of this size cost as much as
        // the copies (their pages faulted in and zeroed).
        let mut st = ParticleState::pooled(m, self.host_set());
        let (stream, force) = (&self.stream, &self.force);
        let idx = self.perm.slice(list);
        let scratch = force.device_ptr(stream).0;
        for id in want.iter() {
            let (src, per) = (self.conserved(id)?, self.words(id));
            // SAFETY: the list holds m indices below n, the force buffer (the scratch) has
            // room for 4 cap words, per * m at most.
            unsafe { gather(stream, &self.k, &idx, src, per, scratch) }.map_err(|e| fail(what, e))?;
            let dst: &mut [u32] = bytemuck::cast_slice_mut(st.bytes_mut(id));
            stream.memcpy_dtoh(&force.slice(0..per * m), &mut dst[..per * m]).map_err(|e| fail(what, e))?;
        }
        self.settle(what)?;
        self.to_host_form(&mut st);
        Ok(st)
    }

    /// Words a particle of buffer `id` takes on this GPU: its host element's, but the ids and
    /// kinds ([`info_words`]).
    fn words(&self, id: BufferId) -> usize {
        if id == BufferId::Info {
            self.info_words
        } else {
            id.elem_bytes() / 4
        }
    }

    /// A state whose buffers were copied from this GPU word for word (the packed ids and
    /// kinds in the first words of theirs) in the host's form: cells and masses
    /// ([`to_host_pos`]), ids and kinds in two words, on the whole grid.
    fn to_host_form(&self, st: &mut ParticleState) {
        let a = st.arrays_mut();
        to_host_pos(&self.whole, self.case.mass as f32, &mut a.pos, &mut a.cell);
        if self.info_words == 1 {
            unpack_infos(&mut a.info);
        }
        st.set_grid(&self.whole);
    }

    /// The conserved buffers of a host state ([`ParticleState`]) of this case: the device's
    /// and the cells ([`to_host_pos`]).
    fn host_set(&self) -> BufferSet {
        BufferSet(self.buffers.0 | BufferId::Cell.bit()).and(BufferSet::conserved())
    }

    /// Re-order the conserved buffers: particle i becomes old particle `perm[i]`, for
    /// i < m (through the force buffer, swapped with each 16-byte buffer).
    fn permute(&mut self, m: usize) -> Result<(), String> {
        let count = m as i32;
        let CudaBackend { stream, k, perm, force: scratch, pos, vel, vel_prev, wall, info, info_words, .. } = self;
        let mut sixteen: Vec<&mut CudaSlice<u32>> = vec![pos, vel, vel_prev];
        if let Some(w) = wall.as_mut() {
            sixteen.push(w);
        }
        for buf in sixteen {
            let mut b = stream.launch_builder(&k.gather16);
            b.arg(&count).arg(&*perm).arg(&*buf).arg(&mut *scratch);
            // SAFETY: argument types match gather16_kernel; both buffers hold 4 cap words.
            unsafe { b.launch(cfg(m)) }.map_err(|e| fail("gather16_kernel", e))?;
            std::mem::swap(buf, scratch);
        }
        let w = *info_words;
        let mut b = stream.launch_builder(if w == 1 { &k.gather4 } else { &k.gather8 });
        b.arg(&count).arg(&*perm).arg(&*info).arg(&mut *scratch);
        // SAFETY: argument types match gather4_kernel / gather8_kernel.
        unsafe { b.launch(cfg(m)) }.map_err(|e| fail("gathering ids", e))?;
        if m > 0 {
            let src = scratch.slice(0..w * m);
            stream.memcpy_dtod(&src, &mut info.slice_mut(0..w * m)).map_err(|e| fail("copying ids", e))?;
        }
        Ok(())
    }

    /// Exclusive scan of the cell table (bins + 2 values) in place ([`scan_table`]).
    fn scan_counts(&mut self) -> Result<(), String> {
        let CudaBackend { stream, k, cell_start, scan, .. } = self;
        scan_table(stream, k, cell_start, scan)
    }

    /// Key every held particle by its stored cell in the window, counting sort (histogram,
    /// scan, scatter, per-bin order by id), gather of the particles kept (the ones
    /// [`Dropping`] names go). Fails with the lowest id of a particle outside the window.
    fn sort(&mut self) -> Result<(), Failure> {
        let n = self.n as i32;
        let (wlo, whi) = self.win.window;
        let drop = self.dropping.take();
        // A device alone whose re-key is unread: every particle held is owned and inside the
        // window unless removed, so with all of them taken as held and owned the keys are
        // those of a sort without dropping, the removed ones dropped, none `bad`, and the
        // statistics the re-key left stay for one read with the counts.
        let unread = std::mem::take(&mut self.rekey_unread);
        let (held, own_lo, own_hi) = match (&drop, unread) {
            (_, true) => (self.n, 0, self.n),
            (Some(d), false) => (d.held, d.own.start, d.own.end),
            (None, false) => (0, 0, 0),
        };
        let (held, own_lo, own_hi) = (held as i32, own_lo as i32, own_hi as i32);
        let bins = self.bins as u32;
        if !unread {
            self.reset_stats()?;
        }
        self.stream.memset_zeros(&mut self.cell_start).map_err(|e| fail("clearing the cell table", e))?;
        {
            // The counts: no permutation (a null pointer).
            let no_perm = 0u64;
            let mut b = self.stream.launch_builder(&self.k.key_sort);
            b.arg(&n).arg(&wlo).arg(&whi).arg(&held).arg(&own_lo).arg(&own_hi).arg(&bins);
            b.arg(&self.pos).arg(&self.info).arg(&mut self.cell_start).arg(&no_perm).arg(&mut self.stats);
            // SAFETY: argument types match key_sort_kernel (a null `perm`: the counts); every
            // buffer holds n elements; keys are at most bins, and the cell table has bins + 2
            // values.
            unsafe { b.launch(cfg(self.n)) }.map_err(|e| fail("key_sort_kernel (counts)", e))?;
        }
        let s = self.read_stats("key_sort_kernel")?;
        let mut dropped = drop.map_or(0, |d| d.dropped);
        if unread {
            // The re-key's (classify): the particles it removed go with the dropped ones. A
            // particle that stops the run leaves every particle where it was, all of them
            // owned again, for the state at failure (`finish_begin` emptied `own`).
            dropped += self.rekey_found(&s).inspect_err(|_| self.own = 0..self.n)?;
        } else if s[STAT_BAD_ID] != u32::MAX {
            return Err(Failure::Device(format!(
                "particle {} lies outside the window of device {} after a rebuild",
                s[STAT_BAD_ID], self.me
            )));
        }
        self.scan_counts()?;
        {
            let mut b = self.stream.launch_builder(&self.k.key_sort);
            b.arg(&n).arg(&wlo).arg(&whi).arg(&held).arg(&own_lo).arg(&own_hi).arg(&bins);
            b.arg(&self.pos).arg(&self.info).arg(&mut self.cell_start).arg(&mut self.perm).arg(&mut self.stats);
            // SAFETY: argument types match key_sort_kernel; the keys are the counts'; perm
            // holds cap >= n entries.
            unsafe { b.launch(cfg(self.n)) }.map_err(|e| fail("key_sort_kernel (placement)", e))?;
            let bins = self.bins as u32;
            // The fluid counts (one bin a cell): the table's bytes after its bins + 2 starts.
            let fluid = self.cell_start.device_ptr(&self.stream).0 + 4 * (self.bins as u64 + 2);
            let mut b = self.stream.launch_builder(&self.k.order_bins);
            b.arg(&bins).arg(&self.cell_start).arg(&mut self.perm).arg(&self.info).arg(&fluid).arg(&mut self.stats);
            // SAFETY: argument types match order_bins_kernel; cell_start has table_words(bins)
            // words: bins + 2 starts, then (one bin a cell: the kernel writes them only then)
            // a byte for each of the bins cells.
            unsafe { b.launch(cfg(self.bins)) }.map_err(|e| fail("order_bins_kernel", e))?;
        }
        // The dropped particles are last (bin `bins`, left unordered): gather the others.
        self.n -= dropped;
        self.permute(self.n)?;
        Ok(())
    }

    /// Launch the force kernel for the particles `range` (no wait).
    fn launch_forces(&mut self, range: Range<usize>) -> Result<(), String> {
        if range.is_empty() {
            return Ok(());
        }
        let (first, count) = (range.start as i32, range.len() as i32);
        let (wlo, whi) = self.win.window;
        let CudaBackend {
            stream,
            k,
            pos,
            vel,
            info,
            wall,
            mdbc,
            cell_start,
            force,
            shift,
            stats,
            dummy,
            dummy_out,
            bins,
            ..
        } = self;
        // The table's fluid counts (one bin a cell; unread with two): after its bins + 2 starts.
        let fluid = cell_start.device_ptr(stream).0 + 4 * (*bins as u64 + 2);
        let mut b = stream.launch_builder(&k.forces);
        b.arg(&first).arg(&count).arg(&wlo).arg(&whi);
        b.arg(&*pos).arg(&*vel).arg(&*info).arg(wall.as_ref().unwrap_or(dummy));
        b.arg(mdbc.as_ref().unwrap_or(dummy)).arg(&*cell_start).arg(force);
        match shift.as_mut() {
            Some(s) => b.arg(s),
            None => b.arg(dummy_out),
        };
        b.arg(stats).arg(&fluid);
        // SAFETY: argument types match forces_kernel; first + count <= n; optional buffers
        // are read only when their option is compiled in; `fluid` lies in `cell_start`'s
        // allocation (table_words) with one bin a cell, the only layout that reads it.
        let block = k.forces_block;
        let config = LaunchConfig {
            grid_dim: ((range.len() as u32).div_ceil(block), 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { b.launch(config) }.map_err(|e| fail("forces_kernel", e))?;
        Ok(())
    }

    /// Copy the force values of the edges with `to_host` into their pinned staging buffers
    /// (no wait), record `edge_done` after them (after the edge forces in any case), then
    /// copy those for neighbours on other ranks into their exported buffers
    /// ([`Self::share_edges`]).
    fn stage_edges(&mut self, to_host: [bool; 2]) -> Result<(), String> {
        let what = "copying edge forces to the host";
        for side in Side::BOTH.into_iter().filter(|&s| to_host[s as usize]) {
            self.stage_host(side)?;
        }
        self.edge_done.record(&self.stream).map_err(|e| fail(what, e))?;
        self.share_edges(to_host)
    }

    /// Queue the copy of the edge on `side`'s values to its pinned staging.
    fn stage_host(&mut self, side: Side) -> Result<(), String> {
        let what = "copying edge forces to the host";
        let r = self.edges[side as usize].clone();
        self.edges_staged[side as usize] = true;
        if r.is_empty() {
            return Ok(());
        }
        let words = 4 * r.len();
        let stage = self.edge_stage[side as usize].as_mut_slice().map_err(|e| fail(what, e))?;
        let (f, rest) = stage.split_at_mut(words);
        self.stream.memcpy_dtoh(&self.force.slice(4 * r.start..4 * r.end), f).map_err(|e| fail(what, e))?;
        if let Some(sh) = self.shift.as_ref() {
            self.stream
                .memcpy_dtoh(&sh.slice(4 * r.start..4 * r.end), &mut rest[..words])
                .map_err(|e| fail(what, e))?;
        }
        Ok(())
    }

    /// Copy the edges' values for the neighbours on other ranks (unless `to_host`) into their
    /// exported buffers (sized at the rebuild), then record the interprocess event they wait
    /// on. Nothing without such a neighbour.
    fn share_edges(&mut self, to_host: [bool; 2]) -> Result<(), String> {
        let what = "copying edge forces for a neighbouring rank's GPU";
        let sides = Side::BOTH.map(|s| self.shared[s as usize] && !to_host[s as usize]);
        if sides == [false; 2] {
            return Ok(());
        }
        for side in Side::BOTH.into_iter().filter(|&s| sides[s as usize]) {
            let r = self.edges[side as usize].clone();
            let Some(buf) = self.ipc_edges[side as usize].as_ref() else { continue };
            if r.is_empty() {
                continue;
            }
            let bytes = 16 * r.len();
            let sources = [Some(&self.force), self.shift.as_ref()];
            for (src, at) in sources.into_iter().flatten().zip([0, bytes as u64]) {
                let from = src.device_ptr(&self.stream).0 + 16 * r.start as u64;
                // SAFETY: the source range holds the edge's values; the exported buffer holds
                // two such ranges (sized at the rebuild) and no neighbour reads it before the
                // event below (see `crate::ipc`).
                unsafe { result::memcpy_dtod_async(buf.ptr + at, from, bytes, self.stream.cu_stream()) }
                    .map_err(|e| fail(what, e))?;
            }
        }
        if self.ipc_event.is_none() {
            self.ipc_event = Some(SharedEvent::new(&self.ctx).map_err(|e| fail(what, e))?);
        }
        self.ipc_event.as_ref().expect("made above").record(&self.stream).map_err(|e| fail(what, e))
    }

    /// Size the pinned staging of the edge exchange for the blocks of the last rebuild.
    fn size_stages(&mut self) -> Result<(), String> {
        let per = 4 * self.values_per_particle();
        for side in Side::BOTH {
            let s = side as usize;
            let need = per * self.edges[s].len();
            if self.edge_stage[s].len() < need {
                self.edge_stage[s] = pinned(&self.ctx, capacity_for(need))?;
            }
            let bytes = 4 * per * self.edges[s].len();
            if self.shared[s] && self.ipc_edges[s].as_ref().is_none_or(|b| b.bytes < bytes) {
                // A neighbour may still read the old one until the next reduction: retired.
                let new = Exported::new(&self.ctx, capacity_for(bytes))
                    .map_err(|e| fail("allocating the edge values for a neighbouring rank", e))?;
                if let Some(old) = self.ipc_edges[s].replace(new) {
                    self.ipc_retired.push(old);
                }
            }
            let need = per * self.copies(side).len();
            if self.copy_stage[s].len() < need {
                self.copy_done[s].synchronize().map_err(|e| fail("waiting for a copy upload", e))?;
                self.copy_stage[s] = pinned(&self.ctx, capacity_for(need))?;
            }
        }
        Ok(())
    }

    /// The update with the host's `dt`, or (`left`: the time to the step's limit) with the
    /// time step computed on the device from the force pass's statistics (`dt_kernel`),
    /// which comes back with the update's: no wait between the force pass and the update.
    fn try_update(&mut self, which: Update, dt: f64, left: Option<f64>) -> Result<DeviceStep, Failure> {
        // Timed only where the host did not wait for the force pass (a device time step).
        let timed = match (&self.update_marks, left) {
            (Some([start, _]), Some(_)) => start.record(&self.stream).is_ok(),
            _ => false,
        };
        if let Some(left) = left {
            let c = &self.case;
            let (cfl, h, c0, cap) = (c.cfl, c.h, c.c0, c.limit_dt(f64::INFINITY));
            let mut b = self.stream.launch_builder(&self.k.dt);
            b.arg(&self.stats).arg(&cfl).arg(&h).arg(&c0).arg(&cap).arg(&left).arg(&mut self.dt_dev);
            let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: argument types match dt_kernel; stats holds 8 words, dt_dev four (two
            // float64, its allocation aligned).
            unsafe { b.launch(one) }.map_err(|e| fail("dt_kernel", e))?;
        }
        self.reset_stats()?;
        let n = self.n as i32;
        let code: i32 = match which {
            Update::Predictor => 0,
            Update::Corrector => 1,
            Update::Verlet => 2,
            Update::VerletEuler => 3,
        };
        let dt32 = dt as f32;
        {
            let CudaBackend {
                stream,
                k,
                pos,
                vel,
                vel_prev,
                pos_prev,
                force,
                info,
                shift,
                stats,
                dummy,
                dummy_out,
                wall,
                mdbc,
                moves,
                nmoves,
                dt_dev,
                ..
            } = self;
            let mut b = stream.launch_builder(&k.update);
            b.arg(&n).arg(&code).arg(&dt32).arg(pos).arg(vel).arg(vel_prev);
            match pos_prev.as_mut() {
                Some(p) => b.arg(p),
                None => b.arg(dummy_out),
            };
            b.arg(&*force).arg(&*info).arg(shift.as_ref().unwrap_or(dummy)).arg(stats);
            match wall.as_mut() {
                Some(w) => b.arg(w),
                None => b.arg(&*dummy),
            };
            match mdbc.as_mut() {
                Some(m) => b.arg(m),
                None => b.arg(&*dummy),
            };
            b.arg(&*nmoves).arg(&*moves);
            let null = 0u64;
            match left {
                Some(_) => b.arg(&*dt_dev),
                None => b.arg(&null),
            };
            // SAFETY: argument types match update_kernel; pos_prev is used only by the
            // symplectic updates, which allocate it; wall and mdbc only where the case
            // allocates them (MOTION with laminar viscosity or mDBC; mDBC); moves holds
            // nmoves entries; dt_dev (or a null pointer) a float64.
            unsafe { b.launch(cfg(self.n)) }.map_err(|e| fail("update_kernel", e))?;
        }
        let timed = timed && self.update_marks.as_ref().is_some_and(|[_, end]| end.record(&self.stream).is_ok());
        // Words 2-4 of the statistics (largest displacement and speed, the failed id), then
        // the device's time steps where it took them.
        let views = [self.stats.slice(2..5), self.dt_dev.slice(..)];
        let v = if left.is_some() { &views[..] } else { &views[..1] };
        let s = read_words(&self.stream, &self.settled, &mut self.words_host, v, "update_kernel")?;
        if s[STAT_BAD_ID - 2] != u32::MAX {
            let bad = self.bad_particle(s[STAT_BAD_ID - 2], Some("has a non-finite velocity, position or density"))?;
            return Err(Failure::Particle(bad));
        }
        let word_f64 = |k: usize| f64::from_bits(u64::from(s[k]) | (u64::from(s[k + 1]) << 32));
        let (dt, time_step) = if left.is_some() { (word_f64(3), word_f64(5)) } else { (dt, dt) };
        // The read waited for the stream, so the end is reached.
        let device_seconds = self.update_marks.as_ref().filter(|_| timed).and_then(seconds_between);
        let stats = UpdateStats { disp_max: f32::from_bits(s[0]), vel_max: f32::from_bits(s[1]) };
        Ok(DeviceStep { dt, time_step, stats, device_seconds })
    }

    /// Copy the particles `r` to the host, through the pinned buffers in chunks of at most
    /// [`HOST_CHUNK`] particles (the host holds the snapshot, not a second image of it).
    fn snapshot_range(&mut self, r: Range<usize>, out: &mut Snapshot) -> Result<(), String> {
        let what = "copying particles to the host";
        let n = r.len();
        macro_rules! fresh {
            ($($v:ident),*) => {$( out.$v.clear(); out.$v.reserve_exact(n); )*};
        }
        fresh!(id, kind, pos, vel, rho, p);
        let mut at = r.start;
        loop {
            let end = r.end.min(at + HOST_CHUNK);
            let m = end - at;
            if m > 0 {
                // Into the first words of the pinned buffers (a copy takes the destination's
                // length).
                let (a, b) = (4 * at, 4 * end);
                let CudaBackend { stream, pos, vel, info, info_words, host_pos, host_vel, host_info, .. } = self;
                for (src, dst) in [(&*pos, host_pos), (&*vel, host_vel)] {
                    let dst = &mut dst.as_mut_slice().map_err(|e| fail(what, e))?[..b - a];
                    stream.memcpy_dtoh(&src.slice(a..b), dst).map_err(|e| fail(what, e))?;
                }
                let w = *info_words;
                let dst = &mut host_info.as_mut_slice().map_err(|e| fail(what, e))?[..w * m];
                stream.memcpy_dtoh(&info.slice(w * at..w * end), dst).map_err(|e| fail(what, e))?;
            }
            self.settle(what)?;
            let pos: &[[f32; 4]] = bytemuck::cast_slice(&self.host_pos.as_slice().map_err(|e| fail(what, e))?[..4 * m]);
            let vel: &[[f32; 4]] = bytemuck::cast_slice(&self.host_vel.as_slice().map_err(|e| fail(what, e))?[..4 * m]);
            let words = &self.host_info.as_slice().map_err(|e| fail(what, e))?[..self.info_words * m];
            let info: Vec<[u32; 2]> = if self.info_words == 1 {
                words.iter().map(|&w| unpack_info(w)).collect()
            } else {
                bytemuck::cast_slice(words).to_vec()
            };
            let c = &self.consts;
            out.id.extend(info.iter().map(|i| i[0]));
            out.kind.extend(info.iter().map(|i| i[1] as u8));
            let g = &self.whole;
            out.pos.extend(pos.iter().map(|p| g.absolute(g.cell_of(p[3].to_bits() as usize), *p)));
            out.vel.extend(vel.iter().map(|v| [v[0], v[1], v[2]]));
            out.rho.extend(vel.iter().map(|v| c.density(v[3])));
            out.p.extend(vel.iter().map(|v| c.pressure(v[3])));
            at = end;
            if at >= r.end {
                return Ok(());
            }
        }
    }

    fn try_fluid_sums(&mut self, xs: &[[f64; 3]], out: &mut Vec<(f64, f64)>) -> Result<(), String> {
        out.clear();
        if xs.is_empty() {
            return Ok(());
        }
        let mut cells = Vec::with_capacity(4 * xs.len());
        let mut offs = Vec::with_capacity(4 * xs.len());
        for &x in xs {
            let (c, o) = self.win.locate(x);
            cells.extend_from_slice(&[c[0] as u32, c[1] as u32, c[2] as u32, 0]);
            offs.extend_from_slice(&[o[0].to_bits(), o[1].to_bits(), o[2].to_bits(), 0]);
        }
        let what = "gauge_sums_kernel";
        if cells.len() > self.gauge_cell.len() {
            self.gauge_cell = self.stream.alloc_zeros::<u32>(cells.len()).map_err(|e| fail(what, e))?;
            self.gauge_off = self.stream.alloc_zeros::<u32>(cells.len()).map_err(|e| fail(what, e))?;
            self.gauge_out = self.stream.alloc_zeros::<f64>(2 * xs.len()).map_err(|e| fail(what, e))?;
        }
        let points = xs.len() as i32;
        let (wlo, whi) = self.win.window;
        self.stream.memcpy_htod(&cells, &mut self.gauge_cell.slice_mut(0..cells.len())).map_err(|e| fail(what, e))?;
        self.stream.memcpy_htod(&offs, &mut self.gauge_off.slice_mut(0..offs.len())).map_err(|e| fail(what, e))?;
        {
            let mut b = self.stream.launch_builder(&self.k.gauge_sums);
            b.arg(&points).arg(&wlo).arg(&whi).arg(&self.gauge_cell).arg(&self.gauge_off).arg(&self.pos);
            b.arg(&self.vel).arg(&self.cell_start).arg(&mut self.gauge_out);
            // SAFETY: argument types match gauge_sums_kernel; `points` fits the gauge buffers.
            unsafe { b.launch(cfg(xs.len())) }.map_err(|e| fail(what, e))?;
        }
        // The kernel over first: a copy to pageable memory may block in the driver until the
        // stream reaches it ([`settle`]); the second wait is for the copy.
        self.settle(what)?;
        let mut sums = vec![0.0f64; 2 * xs.len()];
        let view = self.gauge_out.slice(0..2 * xs.len());
        self.stream.memcpy_dtoh(&view, &mut sums).map_err(|e| fail(what, e))?;
        self.settle(what)?;
        out.extend(sums.chunks(2).map(|c| (c[0], c[1])));
        Ok(())
    }

    fn try_front(&mut self, axis: usize, below: f64) -> Result<Option<f64>, String> {
        let what = "front_kernel";
        self.stream.memset_zeros(&mut self.front_out).map_err(|e| fail(what, e))?;
        let vert = self.case.dim - 1;
        let (first, count) = (self.own.start as i32, self.own.len() as i32);
        let (ax, below_rel) = (axis as i32, below - self.whole.origin[vert]);
        if count > 0 {
            let mut b = self.stream.launch_builder(&self.k.front);
            b.arg(&first).arg(&count).arg(&ax).arg(&below_rel);
            b.arg(&self.pos).arg(&self.info).arg(&mut self.front_out);
            // SAFETY: argument types match front_kernel; first + count <= n.
            unsafe { b.launch(cfg(self.own.len())) }.map_err(|e| fail(what, e))?;
        }
        // As in `try_fluid_sums`.
        self.settle(what)?;
        let mut v = [0u64; 1];
        self.stream.memcpy_dtoh(&self.front_out, &mut v).map_err(|e| fail(what, e))?;
        self.settle(what)?;
        Ok((v[0] != 0).then(|| f64::from_bits(v[0]) - self.whole.cell[axis] + self.whole.origin[axis]))
    }

    fn try_boundary_loads(&mut self, ids: &[Range<u32>], out: &mut Vec<ParticleLoad>) -> Result<(), String> {
        out.clear();
        let what = "boundary_loads_kernel";
        // No more entries than owned particles, nor than ids asked for.
        let asked: usize = ids.iter().map(|r| r.len()).sum();
        let capacity = asked.min(self.own.len());
        if ids.is_empty() || capacity == 0 {
            return Ok(());
        }
        let words: Vec<u32> = ids.iter().flat_map(|r| [r.start, r.end]).collect();
        if words.len() > self.loads_ids.len() {
            self.loads_ids = self.stream.alloc_zeros::<u32>(words.len()).map_err(|e| fail(what, e))?;
        }
        if 12 * capacity > self.loads_out.len() {
            self.loads_out = self.stream.alloc_zeros::<u32>(12 * capacity).map_err(|e| fail(what, e))?;
        }
        self.stream.memcpy_htod(&words, &mut self.loads_ids.slice_mut(0..words.len())).map_err(|e| fail(what, e))?;
        self.stream.memset_zeros(&mut self.loads_count).map_err(|e| fail(what, e))?;
        let (first, count, nranges, cap) =
            (self.own.start as i32, self.own.len() as i32, ids.len() as i32, capacity as u32);
        let (wlo, whi) = self.win.window;
        {
            let CudaBackend {
                stream,
                k,
                pos,
                vel,
                info,
                wall,
                mdbc,
                cell_start,
                dummy,
                loads_ids,
                loads_count,
                loads_out,
                ..
            } = self;
            let mut b = stream.launch_builder(&k.boundary_loads);
            b.arg(&first).arg(&count).arg(&wlo).arg(&whi).arg(&nranges).arg(&*loads_ids);
            b.arg(&*pos).arg(&*vel).arg(&*info).arg(wall.as_ref().unwrap_or(dummy));
            b.arg(mdbc.as_ref().unwrap_or(dummy)).arg(&*cell_start).arg(&cap).arg(loads_count).arg(loads_out);
            // SAFETY: argument types match boundary_loads_kernel; first + count <= n; `loads_ids` holds
            // 2 nranges words and `loads_out` 12 cap; `wall` is read only with laminar
            // viscosity and `mdbc` only with mDBC, which allocate them.
            unsafe { b.launch(cfg(self.own.len())) }.map_err(|e| fail(what, e))?;
        }
        let v = [self.loads_count.slice(0..1)];
        let m = (read_words(&self.stream, &self.settled, &mut self.words_host, &v, what)?[0] as usize).min(capacity);
        if m == 0 {
            return Ok(());
        }
        // As in `try_fluid_sums`: the kernel is over (read_words waited), then the copy.
        let mut host = vec![0u32; 12 * m];
        self.stream.memcpy_dtoh(&self.loads_out.slice(0..12 * m), &mut host).map_err(|e| fail(what, e))?;
        self.settle(what)?;
        out.extend(host.chunks_exact(12).map(|e| {
            let f = |w: u32| f32::from_bits(w);
            let cell = [e[8] as i32, e[9] as i32, e[10] as i32, 0];
            ParticleLoad {
                id: e[3],
                pos: self.whole.absolute(cell, [f(e[4]), f(e[5]), f(e[6]), 0.0]),
                force: [f(e[0]), f(e[1]), f(e[2])],
            }
        }));
        Ok(())
    }

    fn try_body_loads(&mut self, bodies: &[BodyLoad], out: &mut [i64]) -> Result<(), String> {
        let what = "body_loads_kernel";
        let len = LOAD_LEN * bodies.len();
        if 8 + BODY_WORDS * bodies.len() > self.body_table.len() || len > self.body_out.len() {
            return Err(format!("{what}: {} bodies for tables of {}", bodies.len(), self.body_out.len() / LOAD_LEN));
        }
        let (g, table) = (&self.whole, &mut self.body_table_host);
        table.clear();
        table.extend([g.origin[0], g.origin[1], g.origin[2], g.cell[0], g.cell[1], g.cell[2], self.case.dp, 0.0]);
        for b in bodies {
            table.extend([b.ids.start as f64, b.ids.end as f64]);
            table.extend(b.centre);
            table.extend([b.scale.force, b.scale.moment, b.contact[0], b.contact[1], 0.0]);
        }
        let stream = self.stream.clone();
        stream.memcpy_htod(&*table, &mut self.body_table.slice_mut(0..table.len())).map_err(|e| fail(what, e))?;
        stream.memset_zeros(&mut self.body_out.slice_mut(0..len)).map_err(|e| fail(what, e))?;
        let (first, count, nbodies) = (self.own.start as i32, self.own.len() as i32, bodies.len() as i32);
        let (wlo, whi) = self.win.window;
        {
            let CudaBackend { k, pos, vel, info, wall, mdbc, cell_start, dummy, body_table, body_out, .. } = self;
            let mut b = stream.launch_builder(&k.body_loads);
            b.arg(&first).arg(&count).arg(&wlo).arg(&whi).arg(&nbodies).arg(&*body_table);
            b.arg(&*pos).arg(&*vel).arg(&*info).arg(wall.as_ref().unwrap_or(dummy));
            b.arg(mdbc.as_ref().unwrap_or(dummy)).arg(&*cell_start).arg(body_out);
            // SAFETY: argument types match body_loads_kernel; first + count <= n; `body_table`
            // holds 8 + 10 nbodies float64 and `body_out` 6 nbodies; `wall` is read only with
            // laminar viscosity and `mdbc` only with mDBC, which allocate them.
            unsafe { b.launch(cfg(self.own.len())) }.map_err(|e| fail(what, e))?;
        }
        self.body_out_host.resize(len, 0);
        stream.memcpy_dtoh(&self.body_out.slice(0..len), &mut self.body_out_host).map_err(|e| fail(what, e))?;
        self.settle(what)?;
        for (o, &s) in out.iter_mut().zip(&self.body_out_host) {
            *o = o.wrapping_add(s as i64);
        }
        Ok(())
    }

    /// The device buffer of a conserved buffer id; an error names one the case lacks.
    fn conserved(&self, id: BufferId) -> Result<&CudaSlice<u32>, String> {
        match id {
            BufferId::Pos => Some(&self.pos),
            BufferId::Vel => Some(&self.vel),
            BufferId::Info => Some(&self.info),
            BufferId::VelPrev => Some(&self.vel_prev),
            BufferId::Wall => self.wall.as_ref(),
            _ => None,
        }
        .ok_or_else(|| format!("no device buffer for {}", id.name()))
    }

    /// [`Self::conserved`], to write (None when the case has no such buffer).
    fn conserved_mut(&mut self, id: BufferId) -> Option<&mut CudaSlice<u32>> {
        match id {
            BufferId::Pos => Some(&mut self.pos),
            BufferId::Vel => Some(&mut self.vel),
            BufferId::Info => Some(&mut self.info),
            BufferId::VelPrev => Some(&mut self.vel_prev),
            BufferId::Wall => self.wall.as_mut(),
            _ => None,
        }
    }

    /// Upload the conserved buffers of a host `state` (cells apart) to the particles
    /// `at..at + state.len()` (room for them must exist). The state is turned into the
    /// device's form in place (no copy of it: host links upload one at every rebuild), so its
    /// contents are spent.
    fn upload(&mut self, state: &mut ParticleState, at: usize) -> Result<(), String> {
        let want = self.buffers.and(BufferSet::conserved());
        let stream = self.stream.clone();
        let n = state.len();
        let a = state.arrays_mut();
        if a.cell.len() != a.pos.len() {
            return Err(format!("{} cells for {} positions", a.cell.len(), a.pos.len()));
        }
        to_device_pos(&self.whole, &mut a.pos, &a.cell);
        if self.info_words == 1 {
            pack_infos(&mut a.info)?;
        }
        for id in want.iter() {
            let per = self.words(id);
            let src: &[u32] = bytemuck::cast_slice(state.bytes(id));
            // Packed ids and kinds fill the first half of their host buffer (`pack_infos`).
            let src = if id == BufferId::Info && per == 1 { &src[..src.len().min(n)] } else { src };
            if src.len() != per * n {
                return Err(format!("buffer `{}` holds {} words for {n} particles", id.name(), src.len()));
            }
            let dst = self.conserved_mut(id).ok_or_else(|| format!("no device buffer for {}", id.name()))?;
            let mut view = dst.slice_mut(per * at..per * at + src.len());
            stream.memcpy_htod(src, &mut view).map_err(|e| fail("uploading particles", e))?;
        }
        Ok(())
    }

    fn try_export(&mut self, out: &mut ParticleState) -> Result<(), String> {
        let want = self.buffers.and(BufferSet::conserved());
        let host = self.host_set();
        let r = self.own.clone();
        if out.len() != r.len() || out.buffers() != host {
            *out = ParticleState::zeroed(r.len(), host);
        }
        let stream = &self.stream;
        for id in want.iter() {
            let per = self.words(id);
            let dst: &mut [u32] = bytemuck::cast_slice_mut(out.bytes_mut(id));
            let src = self.conserved(id)?;
            if !r.is_empty() {
                let view = src.slice(per * r.start..per * r.end);
                stream
                    .memcpy_dtoh(&view, &mut dst[..per * r.len()])
                    .map_err(|e| fail("copying the particle state", e))?;
            }
        }
        self.settle("copying the particle state")?;
        self.to_host_form(out);
        Ok(())
    }

    fn try_import(&mut self, mut state: ParticleState) -> Result<(), String> {
        // A state from another grid (the CPU's cells are larger) moves to this one's cells.
        state.prepare_import(self.host_set(), &self.whole)?;
        let m = state.len();
        self.settle("loading the particle state")?;
        // Nothing held is kept.
        self.n = 0;
        self.dropping = None;
        self.mdbc_fixed_key = None;
        self.ensure_capacity(m)?;
        self.upload(&mut state, 0)?;
        self.settle("loading the particle state")?;
        self.n = m;
        self.own = 0..m;
        self.edges = [0..0, 0..0];
        self.mdbc_range = 0..0;
        Ok(())
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn len(&self) -> usize {
        self.own.len()
    }

    fn open_counts(&self) -> [u64; 2] {
        [self.spawned, self.outflow]
    }

    fn set_time(&mut self, t: f64) {
        self.time = t;
    }

    fn removed(&self) -> u64 {
        self.removed
    }

    fn removed_for_density(&self) -> u64 {
        self.removed_for_density
    }

    fn arm_density_range(&mut self) {
        self.density_bounds = self.case.density_bounds();
    }

    fn bytes_per_particle(&self) -> usize {
        allocated_per_particle(
            self.buffers,
            self.info_words,
            self.mdbc_table.is_some(),
            self.n,
            self.cap,
            self.win.cell_count(),
            self.per_cell,
        )
    }

    fn inner_forces_run_on(&self) -> bool {
        true
    }
    fn grid(&self) -> &Grid {
        &self.whole
    }

    fn rebuild_begin(
        &mut self,
        map: &SliceMap,
        me: usize,
        rekey: bool,
        out: &mut [ParticleState; 2],
    ) -> Result<(), Failure> {
        self.rebuild_begin_peer(map, me, rekey, [Link::Host; 2], out).map(|_| ())
    }

    fn rebuild_begin_peer(
        &mut self,
        map: &SliceMap,
        me: usize,
        rekey: bool,
        links: [Link; 2],
        out: &mut [ParticleState; 2],
    ) -> Result<Option<[Option<DeviceBlock>; 2]>, Failure> {
        self.bind()?;
        self.edges_released()?;
        self.rebuild_marked = match &self.rebuild_marks {
            Some([start, _]) if start.record(&self.stream).is_ok() => 1,
            _ => 0,
        };
        let (kept, left, right) = self.classify(map, me, rekey)?;
        let m = self.own.len();
        let mut blocks: [Option<DeviceBlock>; 2] = [None, None];
        for (side, list) in [(Side::Left, 0..left), (Side::Right, m - right..m)] {
            let s = side as usize;
            match links[s] {
                Link::Host => out[s] = self.gather_out(list)?,
                _ if map.neighbour(me, side).is_none() => {}
                Link::Process => blocks[s] = Some(self.gather_peer(side, list)?),
                Link::Node => blocks[s] = Some(self.gather_shared(side, list)?),
            }
        }
        self.shared = links.map(|l| l == Link::Node);
        self.finish_begin(map, me, kept)?;
        // The edge values go where the particles went.
        self.edges_to_host = links.map(|l| l == Link::Host);
        Ok(Some(blocks))
    }

    fn share_offer(&mut self) -> Result<Option<Vec<u8>>, Failure> {
        self.bind()?;
        if self.ipc_probe.is_some() {
            return Err(Failure::Device(format!("{}: offered its memory twice", self.name)));
        }
        // Device blocks within this process in any case; across processes when the GPU's
        // memory can be exported (else an empty offer).
        match ipc::offer(&self.stream) {
            Ok((buf, msg)) => {
                self.ipc_probe = Some(buf);
                Ok(Some(msg))
            }
            Err(e) => {
                tracing::info!("{}: its memory cannot be shared with other processes: {e:?}", self.name);
                Ok(Some(Vec::new()))
            }
        }
    }

    fn share_accept(&mut self, offer: &[u8]) -> Result<bool, Failure> {
        self.bind()?;
        match ipc::accept(&mut self.imports, offer) {
            Ok(()) => Ok(true),
            Err(e) => {
                tracing::info!("{}: cannot reach the memory of a neighbouring rank's GPU: {e}", self.name);
                Ok(false)
            }
        }
    }

    fn rebuild_end(&mut self, incoming: [ParticleState; 2]) -> Result<(), Failure> {
        self.rebuild_end_peer([None, None], incoming)
    }

    fn rebuild_end_peer(
        &mut self,
        incoming: [Option<DeviceBlock>; 2],
        mut states: [ParticleState; 2],
    ) -> Result<(), Failure> {
        self.bind()?;
        let (conserved, host) = (self.buffers.and(BufferSet::conserved()), self.host_set());
        let mut blocks: [Option<Incoming>; 2] = [None, None];
        let mut bad = None;
        for part in states.iter().filter(|p| !p.is_empty()) {
            if let Err(e) = buffers::require(part.buffers(), host) {
                bad = Some(format!("from a neighbour: {e}"));
            }
        }
        for (slot, b) in blocks.iter_mut().zip(incoming) {
            let b = match b {
                None => continue,
                Some(DeviceBlock::Local(b)) => match b.downcast::<RebuildBlock>() {
                    Ok(b) => Incoming::Local(b),
                    Err(_) => {
                        bad = Some("particles from a neighbour in a block that is not a CUDA device's".to_string());
                        continue;
                    }
                },
                Some(DeviceBlock::Shared(bytes)) => match Shared::from_bytes(&bytes) {
                    Ok(Shared::Particles { mem, count, buffers }) => match self.imports.mem(&mem) {
                        Ok(src) => Incoming::Shared { src, count: count as usize, buffers: BufferSet(buffers) },
                        Err(e) => {
                            bad = Some(e);
                            continue;
                        }
                    },
                    Ok(other) => {
                        bad = Some(format!("expected particles from a neighbouring rank, got {other:?}"));
                        continue;
                    }
                    Err(e) => {
                        bad = Some(e);
                        continue;
                    }
                },
            };
            if b.count() > 0 {
                if let Err(e) = buffers::require(b.buffers(), conserved) {
                    bad = Some(format!("from a neighbour: {e}"));
                }
            }
            *slot = Some(b);
        }
        if let Some(e) = bad {
            // The blocks held are released here, nothing was queued.
            return Err(Failure::Device(e));
        }
        let total = self.n
            + blocks.iter().flatten().map(Incoming::count).sum::<usize>()
            + states.iter().map(ParticleState::len).sum::<usize>();
        self.ensure_capacity(total)?;
        // Left, then right, after the particles held, as `rebuild_end` uploads them. The
        // blocks (hence the senders' staging buffers) are released only once the copies are
        // over, errors included (see `crate::peer`).
        let queued = (|| {
            for (block, state) in blocks.iter().zip(&mut states) {
                match block {
                    Some(b) => self.take_particles(b)?,
                    None if !state.is_empty() => {
                        self.upload(state, self.n)?;
                        self.n += state.len();
                    }
                    None => {}
                }
            }
            Ok::<(), Failure>(())
        })();
        // Nothing copied (a device alone): nothing to wait for.
        let copied = blocks.iter().any(Option::is_some) || states.iter().any(|s| !s.is_empty());
        let synced = if copied { self.settle("copying particles from a neighbour's GPU") } else { Ok(()) };
        drop(blocks);
        // Uploaded (the stream is settled): the host buffers serve the next rebuild.
        if synced.is_ok() {
            states.into_iter().for_each(ParticleState::recycle);
        }
        queued?;
        synced?;
        self.finish_end()
    }

    fn forces(&mut self, part: Part) -> Result<(), Failure> {
        self.bind()?;
        match part {
            Part::Edges => {
                self.edges_released()?;
                self.reset_stats()?;
                // Before any force: the buffer particles' values and the boundary densities
                // the force pass reads.
                self.launch_open()?;
                self.launch_mdbc()?;
                let [l, r] = self.edges.clone();
                self.launch_forces(l)?;
                self.launch_forces(r)?;
                // The edges' values go to pinned memory (unless they go GPU to GPU) before the
                // inner part is launched, so `edge_forces` waits for the edges alone.
                self.edges_staged = [false; 2];
                self.stage_edges(self.edges_to_host)?;
            }
            Part::Inner => {
                let inner = self.edges[0].end..self.edges[1].start;
                self.launch_forces(inner)?;
            }
        }
        Ok(())
    }

    fn rebuild_device_seconds(&mut self) -> Option<f64> {
        // Asked after every force pass: nothing to do but after a rebuild.
        if self.rebuild_marked != 2 {
            return None;
        }
        self.bind().ok()?;
        let marks = self.rebuild_marks.as_ref()?;
        // Read once, and only once the end is reached (after the force pass's wait it is):
        // elapsed_ms would wait for it.
        if !marks[1].is_complete() {
            return None;
        }
        self.rebuild_marked = 0;
        seconds_between(marks)
    }

    fn force_stats(&mut self) -> Result<ForceStats, Failure> {
        self.bind()?;
        let s = self.read_stats("forces_kernel")?;
        Ok(ForceStats { acc_max: f32::from_bits(s[0]), visc_max: f32::from_bits(s[1]) })
    }

    fn edge_forces(&mut self, side: Side, out: &mut Vec<[f32; 4]>) -> Result<(), Failure> {
        self.bind()?;
        let what = "copying edge forces to the host";
        out.clear();
        if self.edges[side as usize].is_empty() {
            return Ok(());
        }
        if !self.edges_staged[side as usize] {
            // The last pass sent them GPU to GPU: stage them now (behind the inner forces).
            self.edges_to_host[side as usize] = true;
            self.stage_host(side).and_then(|()| self.edge_done.record(&self.stream).map_err(|e| fail(what, e)))?;
        }
        self.edge_done.synchronize().map_err(|e| fail(what, e))?;
        let words = 4 * self.values_per_particle() * self.edges[side as usize].len();
        if words > 0 {
            let stage = self.edge_stage[side as usize].as_slice().map_err(|e| fail(what, e))?;
            out.extend_from_slice(bytemuck::cast_slice(&stage[..words]));
        }
        Ok(())
    }

    fn set_copy_forces(&mut self, side: Side, values: &[[f32; 4]]) -> Result<(), Failure> {
        self.bind()?;
        let r = self.copies(side);
        let per = self.values_per_particle();
        if values.len() != per * r.len() {
            return Err(Failure::Device(format!(
                "{} force values for the {} copies from the {side:?} neighbour",
                values.len(),
                r.len()
            )));
        }
        if r.is_empty() {
            return Ok(());
        }
        let what = "copying forces to the copies";
        let s = side as usize;
        let words = 4 * r.len();
        // The last upload from this staging buffer must be over before it is refilled.
        self.copy_done[s].synchronize().map_err(|e| fail(what, e))?;
        let stage = self.copy_stage[s].as_mut_slice().map_err(|e| fail(what, e))?;
        let stage = &mut stage[..per * words];
        stage.copy_from_slice(bytemuck::cast_slice(values));
        // From page-locked memory the uploads are queued behind the inner forces without
        // blocking the host.
        let (f, sh) = stage.split_at(words);
        self.stream.memcpy_htod(f, &mut self.force.slice_mut(4 * r.start..4 * r.end)).map_err(|e| fail(what, e))?;
        if let Some(dst) = self.shift.as_mut() {
            self.stream.memcpy_htod(sh, &mut dst.slice_mut(4 * r.start..4 * r.end)).map_err(|e| fail(what, e))?;
        }
        self.copy_done[s].record(&self.stream).map_err(|e| fail(what, e))?;
        Ok(())
    }

    fn edge_forces_peer(&mut self, side: Side) -> Result<Option<DeviceBlock>, Failure> {
        self.bind()?;
        // From the next pass on, the values stay on the GPU.
        self.edges_to_host[side as usize] = false;
        let r = self.edges[side as usize].clone();
        if self.shared[side as usize] {
            // Copied to the exported buffer behind the edge forces (`share_edges`).
            let (Some(buf), Some(ev)) = (self.ipc_edges[side as usize].as_ref(), self.ipc_event.as_ref()) else {
                return Err(Failure::Device(format!(
                    "{}: no edge values were shared with the {side:?} neighbour in this pass",
                    self.name
                )));
            };
            let msg = Shared::Forces {
                mem: buf.handle.clone(),
                event: ev.handle.clone(),
                count: r.len() as u64,
                shift: self.shift.is_some(),
            };
            return Ok(Some(DeviceBlock::Shared(msg.to_bytes())));
        }
        let at = |b: &CudaSlice<u32>| b.device_ptr(&self.stream).0 + 16 * r.start as u64;
        Ok(Some(DeviceBlock::Local(Box::new(EdgeBlock {
            ctx: self.ctx.clone(),
            done: self.edge_done.clone(),
            force: at(&self.force),
            shift: self.shift.as_ref().map(at),
            count: r.len(),
        }))))
    }

    fn set_copy_forces_peer(&mut self, side: Side, block: DeviceBlock) -> Result<f64, Failure> {
        self.bind()?;
        let kind = |what: &str| {
            Failure::Device(format!("force values from the {side:?} neighbour in a block that is not {what}"))
        };
        // The source: its context, where the force (and shifting) values are, how many, and
        // what to wait for.
        enum Wait {
            Local(Arc<CudaEvent>),
            Shared(sys::CUevent),
        }
        let (src_ctx, force, shift, count, wait, held) = match block {
            DeviceBlock::Local(b) => {
                let b = b.downcast::<EdgeBlock>().map_err(|_| kind("a CUDA device's"))?;
                let (ctx, force, shift, count, done) = (b.ctx.clone(), b.force, b.shift, b.count, b.done.clone());
                (ctx, force, shift, count, Wait::Local(done), Some(b))
            }
            DeviceBlock::Shared(bytes) => {
                let Shared::Forces { mem, event, count, shift } =
                    Shared::from_bytes(&bytes).map_err(Failure::Device)?
                else {
                    return Err(kind("a CUDA device's edge values"));
                };
                let count = count as usize;
                let base = self.imports.mem(&mem).map_err(Failure::Device)?;
                let ev = self.imports.event(&event).map_err(Failure::Device)?;
                (self.ctx.clone(), base, shift.then(|| base + 16 * count as u64), count, Wait::Shared(ev), None)
            }
        };
        let r = self.copies(side);
        if count != r.len() || shift.is_some() != self.shift.is_some() {
            return Err(Failure::Device(format!(
                "{} force values{} for the {} copies from the {side:?} neighbour",
                count,
                if shift.is_some() { " with shifting" } else { "" },
                r.len()
            )));
        }
        if r.is_empty() {
            return Ok(0.0);
        }
        let what = "copying forces from a neighbour's GPU";
        // On the host first: a neighbour still computing its edges is load imbalance.
        let t = std::time::Instant::now();
        match &wait {
            Wait::Local(done) => done.synchronize(),
            // SAFETY: the event is open in this process until the backend is dropped.
            Wait::Shared(ev) => unsafe { sys::cuEventSynchronize(*ev) }.result(),
        }
        .map_err(|e| Failure::Device(fail(what, e)))?;
        let behind = t.elapsed().as_secs_f64();
        // Imported memory is mapped into this context.
        let mapped = if held.is_some() { self.reach(&src_ctx)? } else { true };
        // Behind the neighbour's edge forces; a local block (so the neighbour's right to
        // rewrite its values) is released only once the copy is over (see `crate::peer`).
        let queued = (|| {
            match &wait {
                Wait::Local(done) => self.stream.wait(done)?,
                Wait::Shared(ev) => ipc::wait(&self.stream, *ev)?,
            }
            let bytes = 16 * r.len();
            let dst = self.force.device_ptr(&self.stream).0 + 16 * r.start as u64;
            // SAFETY: both ranges hold `bytes` bytes (same particle count, 4 words each); the
            // sender keeps its values until the copy is over (see `crate::peer`, `crate::ipc`).
            unsafe { peer::copy(&self.stream, dst, &src_ctx, force, bytes, mapped) }?;
            if let (Some(d), Some(src)) = (self.shift.as_ref(), shift) {
                let dst = d.device_ptr(&self.stream).0 + 16 * r.start as u64;
                // SAFETY: as above.
                unsafe { peer::copy(&self.stream, dst, &src_ctx, src, bytes, mapped) }?;
            }
            Ok(())
        })()
        .map_err(|e: DriverError| fail(what, e));
        let synced = self.settle(what);
        drop(held);
        queued.and(synced).map(|()| behind).map_err(Failure::Device)
    }

    fn update(&mut self, which: Update, dt: f64) -> Result<UpdateStats, Failure> {
        self.bind()?;
        self.try_update(which, dt, None).map(|s| s.stats)
    }

    fn device_time_step(&self) -> bool {
        true
    }

    fn update_device_dt(&mut self, which: Update, left: f64) -> Result<DeviceStep, Failure> {
        self.bind()?;
        self.try_update(which, 0.0, Some(left))
    }

    fn set_moves(&mut self, moves: &[SolidMove]) -> Result<(), Failure> {
        self.bind()?;
        let words: &[f64] = bytemuck::cast_slice(moves);
        if words.len() > self.moves.len() {
            return Err(Failure::Device(format!(
                "{} moving solids for a table of {}",
                moves.len(),
                self.moves.len() / MOVE_LEN
            )));
        }
        let what = "uploading the moving solids' moves";
        self.stream
            .memcpy_htod(words, &mut self.moves.slice_mut(0..words.len()))
            .map_err(|e| Failure::Device(fail(what, e)))?;
        self.nmoves = moves.len() as i32;
        Ok(())
    }

    fn body_loads(&mut self, bodies: &[BodyLoad], out: &mut [i64]) -> Result<(), Failure> {
        self.bind()?;
        Ok(self.try_body_loads(bodies, out)?)
    }

    fn snapshot(&mut self, out: &mut Snapshot) -> Result<(), Failure> {
        self.bind()?;
        Ok(self.snapshot_range(self.own.clone(), out)?)
    }

    fn export_state(&mut self, out: &mut ParticleState) -> Result<(), Failure> {
        self.bind()?;
        Ok(self.try_export(out)?)
    }

    fn import_state(&mut self, state: ParticleState) -> Result<(), String> {
        self.bind()?;
        self.edges_released().map_err(|f| f.to_string())?;
        self.try_import(state)
    }
}

impl Interpolate for CudaBackend {
    fn fluid_sums(&mut self, xs: &[[f64; 3]], out: &mut Vec<(f64, f64)>) -> Result<(), String> {
        self.bind()?;
        self.try_fluid_sums(xs, out)
    }
    fn fluid_front(&mut self, axis: usize, below: f64) -> Result<Option<f64>, String> {
        self.bind()?;
        self.try_front(axis, below)
    }
    fn boundary_loads(&mut self, ids: &[Range<u32>], out: &mut Vec<ParticleLoad>) -> Result<(), String> {
        self.bind()?;
        self.try_boundary_loads(ids, out)
    }
}

#[cfg(test)]
mod tests {
    use super::{
        allocated_per_particle, capacity_for, cell_word, fits, pack_info, pack_infos, team_headroom, to_device_pos,
        to_host_pos, unpack_infos,
    };
    use surge_core::buffers::{BufferId, BufferSet};
    use surge_core::grid::Grid;

    #[test]
    fn rows_run_across_the_body_force() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
        let at = |file: &str, sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let case = surge_core::Case::from_file(&root.join(file), &sets).unwrap();
            super::cuda_grid(&case).unwrap().order
        };
        // Split along x, gravity along z: rows along y (the key's fastest axis last).
        assert_eq!(at("dam_break_3d.toml", &["dp=0.04"]), [0, 2, 1]);
        // Gravity along y: rows along z, as the axes' own order has them.
        assert_eq!(at("dam_break_3d.toml", &["dp=0.04", "physics.body_force=[0.0,-9.81,0.0]"]), [0, 1, 2]);
        // Gravity along z but y periodic: rows along z, which has walls.
        let channel =
            ["dp=0.04", "domain.periodic=[\"y\"]", "domain.min=[-0.35,-0.2,-0.35]", "domain.max=[3.57,1.2,1.35]"];
        assert_eq!(at("dam_break_3d.toml", &channel), [0, 1, 2]);
        // No body force: the axes' own order.
        let still = ["dp=0.04", "physics.body_force=[0.0,0.0,0.0]", "physics.eos={gamma=7.0,c0=40.0}"];
        assert_eq!(at("dam_break_3d.toml", &still), [0, 1, 2]);
        // 2D keeps the axes' order: the split axis (here y, the column's height), then the
        // other (rows along x).
        assert_eq!(at("dam_break_2d.toml", &[])[..2], [1, 0]);
    }

    #[test]
    fn a_cell_word_gives_back_its_cell() {
        // 3D with the split axis y and z fastest; the two billion particles' grid's size
        // (4.06e9 cells, past i32 and near u32::MAX).
        for (n, order) in [([7, 5, 3], [1, 0, 2]), ([1_500, 1_690, 1_600], [0, 1, 2]), ([40, 30, 1], [0, 1, 2])] {
            let g = Grid {
                origin: [0.0; 3],
                cell: [0.1; 3],
                n,
                periodic: [false; 3],
                order,
                dim: 3,
                support: 0.2,
                skin: 0.0,
                reach: 2,
                window: (0, n[order[0]]),
            };
            let mut seen = Vec::new();
            for c in [[0, 0, 0, 0], [n[0] - 1, n[1] - 1, n[2] - 1, 0], [n[0] / 2, n[1] - 1, 0, 0], [1, 0, n[2] / 3, 0]]
            {
                let w = cell_word(&g, c);
                assert_ne!(w, u32::MAX, "{c:?}: the removed word");
                assert_eq!(g.cell_of(w as usize), c, "{n:?} {order:?}");
                assert_eq!(w as usize, g.linear([c[0], c[1], c[2]]));
                seen.push(w);
            }
            // The last cell is the largest word.
            assert_eq!(seen[1] as usize, g.cell_count() - 1);
            // Positions there and back: the offsets kept, the cells and the mass restored.
            let cells = [[0, 0, 0, 0], [n[0] - 1, n[1] - 1, n[2] - 1, 0], [1, 0, n[2] / 3, 0]];
            let host: Vec<[f32; 4]> = (0..3).map(|k| [0.1 * k as f32, -0.02, 0.03, 0.5]).collect();
            let mut pos = host.clone();
            to_device_pos(&g, &mut pos, &cells);
            let mut back = [[9; 4]; 3];
            to_host_pos(&g, 0.5, &mut pos, &mut back);
            assert_eq!((pos, back), (host, cells));
        }
    }

    #[test]
    fn ids_and_kinds_packed_on_the_gpu_unpack_in_place() {
        let infos = [[0, 0], [1, 1], [7, 2], [(1 << 30) - 1, 1], [123_456_789, 0]];
        // As the GPU gives them: its packed words in the first half of the host's array.
        let mut host = [[0u32; 2]; 5];
        let words: &mut [u32] = bytemuck::cast_slice_mut(&mut host);
        for (k, i) in infos.iter().enumerate() {
            words[k] = pack_info(*i);
        }
        unpack_infos(&mut host);
        assert_eq!(host, infos);
        // And packed in place for an upload: the GPU's words in the first half.
        pack_infos(&mut host).unwrap();
        let words: &[u32] = bytemuck::cast_slice(&host);
        assert_eq!(words[..5], infos.map(pack_info));
        // An id past 2^30 is refused, naming it.
        let e = pack_infos(&mut [[1 << 30, 0]]).unwrap_err();
        assert!(e.contains("particle 1073741824"), "{e}");
    }

    #[test]
    fn a_case_too_big_for_the_gpu_names_the_largest_dp_that_fits() {
        assert!(fits(10, 100, 0.01, 3).is_ok());
        // Eight times the memory in 3D: twice the spacing, with the 10 % margin.
        let e = fits(8_000_000_000, 1_000_000_000, 0.01, 3).unwrap_err();
        assert!(e.contains("needs 8.00 GB") && e.contains("1.00 GB are free"), "{e}");
        let dp: f64 = e.split("about ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert!((dp - 0.01 * (8.0f64 / 0.9).cbrt()).abs() < 1e-6, "{dp}");
    }

    #[test]
    fn a_large_team_slice_keeps_the_headroom_of_its_layers() {
        // A slice of a few layers keeps the 30 % (and 1024).
        assert_eq!(team_headroom(10_000, 2_000, 2, 2), capacity_for(10_000) - 10_000);
        // 450 M particles in 1 700 layers of at most 700 000 between two neighbours: both
        // sides' halo (2) and moves (MAX_MOVE 4) and one layer, 2 % and 1024: 4.2 % instead
        // of 30 %.
        let per_side = (2 + surge_core::decomp::MAX_MOVE as usize + 1) * 700_000;
        let h = team_headroom(450_000_000, 700_000, 2, 2);
        assert_eq!(h, 2 * per_side + 9_000_000 + 1024);
        assert!(h < 450_000_000 / 20, "{h}");
        // At an end of the team, one side's.
        assert_eq!(team_headroom(450_000_000, 700_000, 2, 1), per_side + 9_000_000 + 1024);
        // Test 2 at dp 0.006 on two devices: 2.2 M particles each, layers of 33 000: 12.5 %
        // of headroom instead of 23 %.
        let (n, layer) = (2_224_210, 33_000);
        let one = team_headroom(n, layer, 2, 1) as f64 / n as f64;
        assert!((0.12..0.13).contains(&one), "{one}");
        assert!(team_headroom(n, layer, 2, 2) as f64 / n as f64 > 0.22);
    }

    #[test]
    fn memory_per_particle_counts_the_headroom() {
        assert_eq!(capacity_for(0), 1024);
        assert_eq!(capacity_for(1000), 1000 + 300 + 1024);
        let set = BufferSet::all();
        let on_gpu = set.bytes_per_particle() - BufferId::Press.elem_bytes();
        let n = 1_000_000;
        // A device alone: its buffers and the two table words.
        assert!(allocated_per_particle(set, 2, false, n, n, 0, 2) <= on_gpu + 1);
        // Ids and kinds in one word: 4 bytes less.
        assert!(allocated_per_particle(set, 1, false, n, n, 0, 2) <= on_gpu - 3);
        // In a team: 1.3 times the buffers (plus 1024 particles' worth).
        let b = allocated_per_particle(set, 2, false, n, capacity_for(n), 0, 2);
        assert!(b >= (on_gpu * 13).div_ceil(10) && b <= (on_gpu * 13).div_ceil(10) + 2, "{b} for {on_gpu}");
    }
}
