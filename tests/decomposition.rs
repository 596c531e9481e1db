//! Decomposition is invisible: 1, 2, 3 and 4 devices (CPU workers in CI, GPUs with
//! `SURGE_TEST_BACKEND=cuda`) give bitwise the same particles, compared by id, and the same
//! gauges. Tolerance: none (bitwise). Each particle sums its neighbours in stencil order
//! then by (cell, kind, id) whatever device holds them, copies are updated with their
//! owner's forces, and dt and the rebuild decision are maxima (exact) over the devices, so
//! no rounding differs; a difference of one bit is a bug. The gauges of
//! configs/dam_break_2d.toml include a force gauge on the tank, whose particles lie on every
//! device: each device gives its boundary particles' loads, summed in id order on the host.

mod common;
use common::*;
use surge_core::backend::Snapshot;
use surge_core::grid::Grid;
use surge_core::Case;
use surge_runtime::Simulation;

fn steps(sim: &mut Simulation, n: u64) {
    for _ in 0..n {
        sim.step(f64::INFINITY).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The bits of gauge values, to compare them exactly.
fn bits(g: &[f64]) -> Vec<u64> {
    g.iter().map(|x| x.to_bits()).collect()
}

/// Run the case on 1 device and on each of `counts`, `n` steps, and compare particles and
/// gauges; returns the last multi-device simulation.
fn compare(case: &Case, counts: &[usize], n: u64) -> Simulation {
    let mut one = sim_devices(case, 1);
    steps(&mut one, n);
    assert!(one.rebuilds() > 1, "the run must cross rebuilds: {} rebuilds", one.rebuilds());
    let (s1, g1) = (one.snapshot().unwrap(), one.gauges().unwrap());
    let mut last = None;
    for &k in counts {
        let mut many = sim_devices(case, k);
        assert_eq!(many.device_count(), k);
        steps(&mut many, n);
        assert_eq!(many.rebuilds(), one.rebuilds(), "{k} devices rebuilt at other steps");
        assert_eq!(many.time().to_bits(), one.time().to_bits(), "{k} devices: time");
        assert_same_particles(&s1, &many.snapshot().unwrap(), &format!("{} on {k} devices", case.name));
        assert_eq!(bits(&many.gauges().unwrap()), bits(&g1), "{k} devices: gauges");
        last = Some(many);
    }
    last.expect("at least one device count")
}

#[test]
fn dam_break_2d_on_2_3_4_devices_matches_1_along_y() {
    let case = case("dam_break_2d.toml", &[]);
    compare(&case, &[2, 3, 4], 300);
}

#[test]
fn dam_break_2d_on_2_3_4_devices_matches_1_along_x() {
    // Cut across the surge: the front runs through every slice boundary.
    let case = case("dam_break_2d.toml", &["decomposition.split_axis=\"x\"", "decomposition.balance=false"]);
    let g = compare(&case, &[2, 3, 4], 300).gauges().unwrap();
    let fy = g[surge_core::gauge::columns(&case).iter().position(|c| c == "tank.fy").expect("tank.fy")];
    assert!(fy < 0.0, "the water's weight on the tank: fy = {fy}");
}

#[test]
fn dam_break_3d_on_2_and_3_devices_matches_1() {
    // c0 = 10 sqrt(g H) (the config has the benchmark's 20): dt twice as long, so 60 steps
    // cross rebuilds.
    let case = case("dam_break_3d.toml", &["dp=0.06", "physics.eos.c0_coef=10"]);
    compare(&case, &[2, 3], 60);
}

/// The layer of each fluid particle's position along the split axis, by id.
fn fluid_layers(case: &Case, s: &Snapshot) -> Vec<(u32, i32)> {
    let grid = Grid::new(case, case.split_axis()).unwrap();
    let mut v: Vec<(u32, i32)> = fluid(s).map(|i| (s.id[i], grid.locate(s.pos[i]).0[case.split_axis()])).collect();
    v.sort_unstable();
    v
}

#[test]
fn sloshing_particles_cross_slice_boundaries_both_ways() {
    // Water thrown against the right wall comes back: particles cross the boundaries of 3
    // slices to the right, then to the left.
    let case = case(
        "hydrostatic_2d.toml",
        &["decomposition.split_axis=\"x\"", "initial_velocity={kind=\"constant\",value=[1.5,0.0]}"],
    );
    let mut many = sim_devices(&case, 3);
    let mut one = sim_devices(&case, 1);
    let (mut right, mut left) = (0, 0);
    let bounds: Vec<i32> = many.reports().iter().map(|r| r.slice.1).collect();
    let owner = |l: i32| bounds.iter().position(|&b| l < b).unwrap_or(bounds.len() - 1);
    let mut before = fluid_layers(&case, &many.snapshot().unwrap());
    for _ in 0..40 {
        steps(&mut many, 50);
        steps(&mut one, 50);
        let now = fluid_layers(&case, &many.snapshot().unwrap());
        for ((_, a), (_, b)) in before.iter().zip(&now) {
            match owner(*b).cmp(&owner(*a)) {
                std::cmp::Ordering::Greater => right += 1,
                std::cmp::Ordering::Less => left += 1,
                _ => {}
            }
        }
        before = now;
        if right > 0 && left > 0 {
            break;
        }
    }
    assert!(right > 0 && left > 0, "crossings: {right} to the right, {left} to the left");
    assert_same_particles(&one.snapshot().unwrap(), &many.snapshot().unwrap(), "sloshing on 3 devices");
}

/// Loaders of the CPU devices `devices` of `map` (one thread each), each backend wrapped by
/// `wrap`.
fn cpu_loaders(
    case: &Case,
    filled: &surge_core::geometry::Filled,
    layers: &[i32],
    map: &surge_core::decomp::SliceMap,
    devices: std::ops::Range<usize>,
    wrap: impl Fn(surge_cpu::CpuBackend) -> Box<dyn surge_core::backend::Backend> + Clone + Send + 'static,
) -> Vec<surge_runtime::team::Loader> {
    devices
        .map(|d| {
            let (part, case, wrap) = (filled.owned_by(layers, map, d), case.clone(), wrap.clone());
            Box::new(move || surge_cpu::CpuBackend::new(&case, &part, 1).map(wrap)) as surge_runtime::team::Loader
        })
        .collect()
}

#[test]
fn a_slice_without_fluid_runs_and_matches() {
    // Cut along x by hand: the last slice holds the right wall and no fluid (the column
    // stands at the left end and does not reach it in these steps).
    let case = case("dam_break_2d.toml", &["decomposition.split_axis=\"x\"", "decomposition.balance=false"]);
    let grid = Grid::new(&case, 0).unwrap();
    let n = grid.layers();
    let map = surge_core::decomp::SliceMap { bounds: vec![0, 10, 20, n - 4, n], halo: grid.reach };
    let filled = surge_core::geometry::fill(&case);
    let layers = filled.layers(&grid);
    let loaders = cpu_loaders(&case, &filled, &layers, &map, 0..4, |b| Box::new(b));
    let mut many = Simulation::team(case.clone(), map, grid.clone(), loaders).unwrap();
    let mut one = sim_on(&case, surge_runtime::BackendChoice::Cpu, 1);
    steps(&mut many, 200);
    steps(&mut one, 200);
    let s = many.snapshot().unwrap();
    let last = many.reports()[3].slice;
    assert_eq!(last, (n - 4, n));
    assert!(many.reports()[3].particles > 0, "the wall is there");
    let fluid_in_last = fluid(&s).filter(|&i| grid.locate(s.pos[i]).0[0] >= last.0).count();
    assert_eq!(fluid_in_last, 0, "the last slice should hold no fluid");
    assert_same_particles(&one.snapshot().unwrap(), &s, "with a slice without fluid");
}

/// A dam break whose water column leans on an obstacle (faces at x = 1 and x = 1.2, normal
/// to the split axis x) with mDBC walls: the ghost nodes of the obstacle's and the left
/// wall's particles lie up to 4h from them along x, across slice boundaries. Each device
/// computes the mDBC values of its particles and of the copies its force pass reads, from a
/// halo wide enough for their ghosts ([`surge_core::decomp::halo`]): bitwise the same as one
/// device. Also with a hand-cut slice boundary through the obstacle.
#[test]
fn mdbc_ghosts_across_slice_boundaries_match_one_device() {
    let case = case(
        "dam_break_2d.toml",
        &[
            "decomposition.split_axis=\"x\"",
            r#"physics.boundary={kind="mdbc"}"#,
            "obstacle=[{min=[1.0, 0.0], max=[1.2, 0.3]}]",
        ],
    );
    compare(&case, &[2, 3], 200);
    // Slices of the thinnest width allowed, one boundary at the layer of x = 1.05, inside
    // the obstacle's left face layers; balancing off so it stays there.
    let mut case = case;
    case.balance.enabled = false;
    let grid = Grid::new(&case, 0).unwrap();
    let halo = surge_core::decomp::halo(&case, &grid);
    assert!(halo > grid.reach, "mDBC widens the halo");
    let (face, n) = (grid.locate([1.05, 0.0, 0.0]).0[0], grid.layers());
    let map = surge_core::decomp::SliceMap { bounds: vec![0, face - 2 * halo - 1, face, n], halo };
    let filled = surge_core::geometry::fill(&case);
    let layers = filled.layers(&grid);
    let loaders = cpu_loaders(&case, &filled, &layers, &map, 0..3, |b| Box::new(b));
    let mut many = Simulation::team(case.clone(), map.clone(), grid.clone(), loaders).unwrap();
    let mut one = sim_on(&case, surge_runtime::BackendChoice::Cpu, 1);
    steps(&mut many, 200);
    steps(&mut one, 200);
    assert_same_particles(&one.snapshot().unwrap(), &many.snapshot().unwrap(), "mDBC on hand-cut slices");
    // A map with the stencil's halo alone is refused for an mDBC case.
    let thin = surge_core::decomp::SliceMap { halo: grid.reach, ..map };
    let loaders = cpu_loaders(&case, &filled, &layers, &thin, 0..3, |b| Box::new(b));
    let e = Simulation::team(case, thin, grid, loaders).err().expect("refused");
    assert!(e.contains("halo"), "{e}");
}

#[test]
fn mdbc_dam_break_3d_on_2_devices_matches_1() {
    // The obstacle's faces and the tank's end walls are normal to the split axis (x). mDBC's
    // halo (4 layers) needs slices of 9 layers: 2 devices at this dp.
    let case = case("dam_break_3d.toml", &["dp=0.045", r#"physics.boundary={kind="mdbc"}"#, "physics.eos.c0_coef=10"]);
    compare(&case, &[2], 120);
}

/// The wall function's sums run over each fluid particle's boundary neighbours with their
/// normals, distances and velocities, copies across a slice boundary included: cut across
/// the surge, along the floor it slows, bitwise the same as one device.
#[test]
fn the_wall_function_across_slice_boundaries_matches_one_device() {
    let case = case(
        "dam_break_2d.toml",
        &[
            "decomposition.split_axis=\"x\"",
            r#"physics.boundary={kind="mdbc",slip=true}"#,
            r#"physics.wall_function={kind="log_law"}"#,
        ],
    );
    let mut with = compare(&case, &[2, 3], 200);
    // The function acts in this run: without it the same steps end elsewhere.
    let mut without = case.clone();
    without.wall_function = surge_core::case::WallFunction::None;
    let mut plain = sim_devices(&without, 3);
    steps(&mut plain, 200);
    let (a, b) = (by_id(&with.snapshot().unwrap()), by_id(&plain.snapshot().unwrap()));
    assert!(a.vel.iter().zip(&b.vel).any(|(x, y)| x != y), "the wall function changed no velocity");
}

/// The shipped SPHERIC Test 2 with its gate and wall function (configs/spheric_test2_gate.toml):
/// a solid moved by a table, mDBC free slip and the wall function, on 2 devices cut along x.
#[test]
fn spheric_test2_gate_on_2_devices_matches_1() {
    let case = case("spheric_test2_gate.toml", &["dp=0.045", "physics.eos.c0_coef=10"]);
    compare(&case, &[2], 80);
}

#[test]
fn boundaries_moved_by_the_load_balancer_change_nothing() {
    // Threshold 0: every measured difference moves a boundary, every 10 steps.
    let case = case(
        "dam_break_2d.toml",
        &["decomposition.balance_every=10", "decomposition.balance_threshold=0.0", "decomposition.split_axis=\"x\""],
    );
    let many = compare(&case, &[3], 300);
    let moves: u64 = many.reports().iter().map(|r| r.moves).sum();
    assert!(moves >= 2, "the load balancer moved {moves} boundaries");
}

#[test]
fn too_many_devices_for_the_layers_is_a_clear_error() {
    let case = case("hydrostatic_2d.toml", &["decomposition.split_axis=\"x\""]);
    let req = surge_runtime::DeviceRequest::cpu_workers(8, 8);
    let e = surge_runtime::simulation(&case, &req).err().expect("refused");
    assert!(e.contains("8 devices need at least 24 cell layers"), "{e}");
    let periodic = common::case("taylor_green_2d.toml", &[]);
    let e =
        surge_runtime::simulation(&periodic, &surge_runtime::DeviceRequest::cpu_workers(2, 2)).err().expect("refused");
    assert!(e.contains("periodic along every axis"), "{e}");
}

/// A CPU backend that hands its neighbours device blocks (host buffers in a box), so the
/// workers take the GPU-to-GPU exchange path of the protocol ([`surge_runtime`]'s worker);
/// to neighbours on other ranks it offers "shared" blocks (the buffers as bytes, as CUDA
/// IPC sends handles), accepted when `accept` says so.
struct Blocks {
    cpu: surge_cpu::CpuBackend,
    accept: bool,
    links: [surge_core::backend::Link; 2],
}

impl Blocks {
    fn new(cpu: surge_cpu::CpuBackend, accept: bool) -> Blocks {
        Blocks { cpu, accept, links: Default::default() }
    }
}

/// Shared blocks taken, over every worker.
static SHARED_TAKEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Device blocks taken, over every worker.
static BLOCKS_TAKEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

mod blocks {
    use super::{Blocks, BLOCKS_TAKEN, SHARED_TAKEN};
    use std::ops::Range;
    use std::sync::atomic::Ordering;
    use surge_core::backend::*;
    use surge_core::buffers::ParticleState;
    use surge_core::decomp::{Side, SliceMap};
    use surge_core::gauge::{Interpolate, ParticleLoad};
    use surge_core::grid::Grid;
    use surge_runtime::exchange::{decode, encode, Packet};

    /// A state as one byte string: the messages MPI would carry, each length-prefixed.
    fn to_bytes(p: ParticleState) -> Vec<u8> {
        let (first, rest) = encode(Packet::Particles(p));
        let mut out = Vec::new();
        for m in std::iter::once(first).chain(rest.iter().map(|r| r.bytes().to_vec())) {
            out.extend_from_slice(&(m.len() as u64).to_le_bytes());
            out.extend_from_slice(&m);
        }
        out
    }

    fn from_bytes(b: &[u8]) -> Result<ParticleState, Failure> {
        let mut at = 0;
        let mut next = || {
            let n = u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
            at += 8 + n;
            &b[at - n..at]
        };
        let first = next().to_vec();
        match decode(&first, |buf| {
            buf.copy_from_slice(next());
            Ok(())
        }) {
            Ok(Packet::Particles(p)) => Ok(p),
            _ => Err(Failure::Device("a shared block that is not particles".into())),
        }
    }

    fn take<T: 'static>(b: DeviceBlock) -> Result<T, Failure> {
        match b {
            DeviceBlock::Local(b) => {
                b.downcast::<T>().map(|b| *b).map_err(|_| Failure::Device("a block of another kind".into()))
            }
            DeviceBlock::Shared(_) => Err(Failure::Device("a shared block where a local one was due".into())),
        }
    }

    impl Interpolate for Blocks {
        fn fluid_sums(&mut self, xs: &[[f64; 3]], out: &mut Vec<(f64, f64)>) -> Result<(), String> {
            self.cpu.fluid_sums(xs, out)
        }
        fn fluid_front(&mut self, axis: usize, below: f64) -> Result<Option<f64>, String> {
            self.cpu.fluid_front(axis, below)
        }
        fn boundary_loads(&mut self, ids: &[Range<u32>], out: &mut Vec<ParticleLoad>) -> Result<(), String> {
            self.cpu.boundary_loads(ids, out)
        }
    }

    impl Backend for Blocks {
        fn name(&self) -> String {
            self.cpu.name()
        }
        fn len(&self) -> usize {
            self.cpu.len()
        }
        fn removed(&self) -> u64 {
            self.cpu.removed()
        }
        fn removed_for_density(&self) -> u64 {
            self.cpu.removed_for_density()
        }
        fn arm_density_range(&mut self) {
            self.cpu.arm_density_range()
        }
        fn open_counts(&self) -> [u64; 2] {
            self.cpu.open_counts()
        }
        fn set_time(&mut self, t: f64) {
            self.cpu.set_time(t)
        }
        fn bytes_per_particle(&self) -> usize {
            self.cpu.bytes_per_particle()
        }
        fn grid(&self) -> &Grid {
            self.cpu.grid()
        }
        fn rebuild_begin(
            &mut self,
            map: &SliceMap,
            me: usize,
            rekey: bool,
            out: &mut [ParticleState; 2],
        ) -> Result<(), Failure> {
            self.cpu.rebuild_begin(map, me, rekey, out)
        }
        fn rebuild_end(&mut self, incoming: [ParticleState; 2]) -> Result<(), Failure> {
            self.cpu.rebuild_end(incoming)
        }
        fn rebuild_begin_peer(
            &mut self,
            map: &SliceMap,
            me: usize,
            rekey: bool,
            links: [Link; 2],
            out: &mut [ParticleState; 2],
        ) -> Result<Option<[Option<DeviceBlock>; 2]>, Failure> {
            self.cpu.rebuild_begin(map, me, rekey, out)?;
            self.links = links;
            let mut block = |s: Side| {
                let mut st = || std::mem::take(&mut out[s as usize]);
                match links[s as usize] {
                    _ if map.neighbour(me, s).is_none() => None,
                    Link::Host => None,
                    Link::Process => Some(DeviceBlock::Local(Box::new(st()))),
                    Link::Node => Some(DeviceBlock::Shared(to_bytes(st()))),
                }
            };
            Ok(Some([block(Side::Left), block(Side::Right)]))
        }
        fn rebuild_end_peer(
            &mut self,
            blocks: [Option<DeviceBlock>; 2],
            states: [ParticleState; 2],
        ) -> Result<(), Failure> {
            let ([l, r], [sl, sr]) = (blocks, states);
            let pick = |b: Option<DeviceBlock>, st: ParticleState| match b {
                None => Ok(st),
                Some(DeviceBlock::Shared(bytes)) => {
                    SHARED_TAKEN.fetch_add(1, Ordering::Relaxed);
                    from_bytes(&bytes)
                }
                Some(b) => take::<ParticleState>(b),
            };
            BLOCKS_TAKEN.fetch_add(1, Ordering::Relaxed);
            self.cpu.rebuild_end([pick(l, sl)?, pick(r, sr)?])
        }
        fn forces(&mut self, part: Part) -> Result<(), Failure> {
            // Work in proportion to the particles held, well above a fast host's timing noise
            // (2 000 particles a device take a tenth of a millisecond on 16 cores), so that
            // the load balancer sees the slices' sizes and moves the boundaries on any machine.
            std::thread::sleep(std::time::Duration::from_nanos(200 * self.cpu.len() as u64));
            self.cpu.forces(part)
        }
        fn inner_forces_run_on(&self) -> bool {
            self.cpu.inner_forces_run_on()
        }
        fn force_stats(&mut self) -> Result<ForceStats, Failure> {
            self.cpu.force_stats()
        }
        fn edge_forces(&mut self, side: Side, out: &mut Vec<[f32; 4]>) -> Result<(), Failure> {
            self.cpu.edge_forces(side, out)
        }
        fn set_copy_forces(&mut self, side: Side, values: &[[f32; 4]]) -> Result<(), Failure> {
            self.cpu.set_copy_forces(side, values)
        }
        fn edge_forces_peer(&mut self, side: Side) -> Result<Option<DeviceBlock>, Failure> {
            let mut v = Vec::new();
            self.cpu.edge_forces(side, &mut v)?;
            Ok(Some(match self.links[side as usize] {
                Link::Node => DeviceBlock::Shared(bytemuck::cast_slice(&v).to_vec()),
                _ => DeviceBlock::Local(Box::new(v)),
            }))
        }
        fn share_offer(&mut self) -> Result<Option<Vec<u8>>, Failure> {
            Ok(Some(b"blocks".to_vec()))
        }
        fn share_accept(&mut self, offer: &[u8]) -> Result<bool, Failure> {
            Ok(self.accept && offer == b"blocks")
        }
        fn set_copy_forces_peer(&mut self, side: Side, block: DeviceBlock) -> Result<f64, Failure> {
            BLOCKS_TAKEN.fetch_add(1, Ordering::Relaxed);
            match block {
                DeviceBlock::Shared(bytes) => {
                    SHARED_TAKEN.fetch_add(1, Ordering::Relaxed);
                    let v: Vec<[f32; 4]> = bytes.chunks_exact(16).map(bytemuck::pod_read_unaligned).collect();
                    self.cpu.set_copy_forces(side, &v)?;
                }
                b => self.cpu.set_copy_forces(side, &take::<Vec<[f32; 4]>>(b)?)?,
            }
            Ok(0.0)
        }
        fn update(&mut self, which: Update, dt: f64) -> Result<UpdateStats, Failure> {
            self.cpu.update(which, dt)
        }
        fn set_moves(&mut self, moves: &[surge_core::motion::SolidMove]) -> Result<(), Failure> {
            self.cpu.set_moves(moves)
        }
        fn body_loads(&mut self, bodies: &[surge_core::bodies::BodyLoad], out: &mut [i64]) -> Result<(), Failure> {
            self.cpu.body_loads(bodies, out)
        }
        fn snapshot(&mut self, out: &mut Snapshot) -> Result<(), Failure> {
            self.cpu.snapshot(out)
        }
        fn export_state(&mut self, out: &mut ParticleState) -> Result<(), Failure> {
            self.cpu.export_state(out)
        }
        fn import_state(&mut self, state: ParticleState) -> Result<(), String> {
            self.cpu.import_state(state)
        }
    }
}

#[test]
fn device_blocks_between_workers_change_nothing() {
    // The exchanges of the GPU-to-GPU path (device blocks), with boundaries moving.
    let case = case(
        "dam_break_2d.toml",
        &["decomposition.balance_every=10", "decomposition.balance_threshold=0.0", "decomposition.split_axis=\"x\""],
    );
    let grid = Grid::new(&case, 0).unwrap();
    let filled = surge_core::geometry::fill(&case);
    let layers = filled.layers(&grid);
    // Slices of equal width, not of equal work: the water lies in the left part of the tank,
    // so the first device holds most of it and the balancer must move the boundaries (a map
    // balanced by weight left the moves to the timings' noise).
    let equal = vec![1u64; grid.layers() as usize];
    let map = surge_core::decomp::SliceMap::balanced(&equal, 3, grid.reach).unwrap();
    let loaders = cpu_loaders(&case, &filled, &layers, &map, 0..3, |b| Box::new(Blocks::new(b, true)));
    let mut many = Simulation::team(case.clone(), map, grid, loaders).unwrap();
    let mut one = sim_on(&case, surge_runtime::BackendChoice::Cpu, 1);
    steps(&mut many, 200);
    steps(&mut one, 200);
    assert!(one.rebuilds() > 1, "the run must cross rebuilds: {} rebuilds", one.rebuilds());
    assert!(BLOCKS_TAKEN.load(std::sync::atomic::Ordering::Relaxed) > 400, "device blocks were exchanged");
    let moves: u64 = many.reports().iter().map(|r| r.moves).sum();
    assert!(moves >= 2, "the load balancer moved {moves} boundaries");
    assert_same_particles(&one.snapshot().unwrap(), &many.snapshot().unwrap(), "device blocks on 3 devices");
}

/// Ranks in one process, for the protocol between ranks without MPI: mailboxes per
/// (from, to, tag), collectives through a table of slots (every rank calls them in the same
/// order, one thread at a time, as with MPI).
mod fake_ranks {
    use std::collections::{HashMap, VecDeque};
    use std::sync::{Arc, Condvar, Mutex};
    use surge_runtime::cluster::Cluster;

    /// Messages waiting, by (from, to, tag).
    type Mailboxes = HashMap<(usize, usize, i32), VecDeque<Vec<u8>>>;

    /// The collective in progress: its generation, each rank's value, the last result.
    #[derive(Default)]
    struct Collective {
        gen: u64,
        slots: Vec<Option<Vec<f64>>>,
        result: Vec<Vec<f64>>,
    }

    #[derive(Default)]
    struct World {
        boxes: Mutex<Mailboxes>,
        mail: Condvar,
        coll: Mutex<Collective>,
        done: Condvar,
    }

    pub struct Fake {
        rank: usize,
        size: usize,
        world: Arc<World>,
    }

    pub fn world(size: usize) -> Vec<Arc<dyn Cluster>> {
        let world = Arc::new(World::default());
        world.coll.lock().unwrap().slots = vec![None; size];
        (0..size).map(|rank| Arc::new(Fake { rank, size, world: world.clone() }) as Arc<dyn Cluster>).collect()
    }

    impl Fake {
        /// Every rank's `v`, in rank order.
        fn all(&self, v: Vec<f64>) -> Vec<Vec<f64>> {
            let mut c = self.world.coll.lock().unwrap();
            let gen = c.gen;
            c.slots[self.rank] = Some(v);
            if c.slots.iter().all(Option::is_some) {
                c.result = c.slots.iter_mut().map(|s| s.take().unwrap()).collect();
                c.gen += 1;
                self.world.done.notify_all();
            } else {
                while c.gen == gen {
                    c = self.world.done.wait(c).unwrap();
                }
            }
            c.result.clone()
        }
    }

    impl Cluster for Fake {
        fn rank(&self) -> usize {
            self.rank
        }
        fn size(&self) -> usize {
            self.size
        }
        fn node_local(&self) -> (usize, usize) {
            (self.rank, self.size)
        }
        fn host(&self) -> String {
            "here".into()
        }
        fn threading(&self) -> String {
            "threads of one process".into()
        }
        fn max(&self, v: &mut [f64]) {
            let all = self.all(v.to_vec());
            for (k, x) in v.iter_mut().enumerate() {
                *x = all.iter().map(|w| w[k]).fold(f64::NEG_INFINITY, f64::max);
            }
        }
        fn sum(&self, v: &mut [f64]) {
            let all = self.all(v.to_vec());
            for (k, x) in v.iter_mut().enumerate() {
                *x = all.iter().map(|w| w[k]).sum();
            }
        }
        fn all_gather(&self, v: &[f64]) -> Vec<f64> {
            self.all(v.to_vec()).concat()
        }
        fn gather_bytes(&self, bytes: Vec<u8>) -> Option<Vec<Vec<u8>>> {
            const TAG: i32 = 99;
            if self.rank == 0 {
                Some(std::iter::once(bytes).chain((1..self.size).map(|r| self.recv(r, TAG))).collect())
            } else {
                self.send(0, TAG, bytes);
                None
            }
        }
        fn send(&self, to: usize, tag: i32, bytes: Vec<u8>) {
            self.world.boxes.lock().unwrap().entry((self.rank, to, tag)).or_default().push_back(bytes);
            self.world.mail.notify_all();
        }
        fn recv(&self, from: usize, tag: i32) -> Vec<u8> {
            let mut b = self.world.boxes.lock().unwrap();
            loop {
                if let Some(m) = b.get_mut(&(from, self.rank, tag)).and_then(VecDeque::pop_front) {
                    return m;
                }
                b = self.world.mail.wait(b).unwrap();
            }
        }
        fn barrier(&self) {
            self.all(Vec::new());
        }
        fn abort(&self, code: i32) -> ! {
            panic!("rank {} aborts with {code}", self.rank)
        }
    }
}

#[test]
fn ranks_that_reach_each_others_memory_exchange_shared_blocks_and_change_nothing() {
    // 2 ranks x 2 devices: links within a rank take local blocks; the link between the ranks
    // takes shared blocks (bytes, as CUDA IPC handles) when both ends accept each other's
    // offer, else host states: two kinds of links in one run. Bitwise equal to one device.
    let case = case("dam_break_2d.toml", &["decomposition.split_axis=\"x\""]);
    let grid = Grid::new(&case, 0).unwrap();
    let filled = surge_core::geometry::fill(&case);
    let layers = filled.layers(&grid);
    let map = surge_core::decomp::SliceMap::balanced(&filled.layer_weights(&layers, &grid), 4, grid.reach).unwrap();
    let mut one = sim_on(&case, surge_runtime::BackendChoice::Cpu, 1);
    steps(&mut one, 200);
    assert!(one.rebuilds() > 1, "the run must cross rebuilds: {} rebuilds", one.rebuilds());
    let (s1, g1) = (one.snapshot().unwrap(), one.gauges().unwrap());
    for accept in [true, false] {
        let before = SHARED_TAKEN.load(std::sync::atomic::Ordering::Relaxed);
        let ranks: Vec<_> = fake_ranks::world(2)
            .into_iter()
            .enumerate()
            .map(|(r, cluster)| {
                // Rank 1 refuses the offer in the second run: host states there.
                let take = accept || r == 0;
                let loaders = cpu_loaders(&case, &filled, &layers, &map, 2 * r..2 * r + 2, move |b| {
                    Box::new(Blocks::new(b, take))
                });
                let (case, map, grid) = (case.clone(), map.clone(), grid.clone());
                std::thread::spawn(move || {
                    let mut sim = Simulation::ranks(case, map, grid, loaders, cluster).unwrap();
                    steps(&mut sim, 200);
                    (sim.snapshot().unwrap(), sim.gauges().unwrap())
                })
            })
            .collect();
        let mut all = Snapshot::default();
        for h in ranks {
            let (mut s, g) = h.join().expect("a rank panicked");
            all.append(&mut s);
            // Every rank evaluates the gauges (the loads of all ranks are gathered on each).
            assert_eq!(bits(&g), bits(&g1), "2 ranks x 2 devices: gauges");
        }
        assert_same_particles(&s1, &all, &format!("2 ranks x 2 devices, offers accepted: {accept}"));
        let shared = SHARED_TAKEN.load(std::sync::atomic::Ordering::Relaxed) - before;
        if accept {
            assert!(shared > 200, "only {shared} shared blocks were taken");
        } else {
            assert_eq!(shared, 0, "a refused offer must leave the link on the host");
        }
    }
}

#[test]
fn ranks_build_only_their_share_and_match_one_device() {
    // Through `simulation_on`, as `surge run` under MPI: each rank counts the case (a census
    // that keeps no particle), cuts it as every other rank does, and fills only the layers of
    // its own devices. At the start the ranks hold every particle of the whole fill once, each
    // fewer than the case; 200 steps later bitwise what one device gives, gauges included.
    let along_x = ["decomposition.split_axis=\"x\""];
    for (overrides, ranks, k) in [(&along_x[..], 2, 1), (&[][..], 3, 1), (&along_x[..], 2, 2)] {
        let case = case("dam_break_2d.toml", overrides);
        let whole = surge_core::geometry::fill(&case);
        let mut one = sim_on(&case, surge_runtime::BackendChoice::Cpu, 1);
        steps(&mut one, 200);
        assert!(one.rebuilds() > 1, "the run must cross rebuilds: {} rebuilds", one.rebuilds());
        let (s1, g1) = (one.snapshot().unwrap(), one.gauges().unwrap());
        let what = format!("{ranks} ranks x {k} devices, {overrides:?}");
        let handles: Vec<_> = fake_ranks::world(ranks)
            .into_iter()
            .map(|cluster| {
                let case = case.clone();
                std::thread::spawn(move || {
                    let req = surge_runtime::DeviceRequest::cpu_workers(k, k);
                    let loaded = surge_runtime::simulation_on(&case, &req, cluster).unwrap_or_else(|e| panic!("{e}"));
                    let mut sim = loaded.sim;
                    let start = sim.snapshot().unwrap();
                    steps(&mut sim, 200);
                    (start, loaded.fluid, sim.snapshot().unwrap(), sim.gauges().unwrap())
                })
            })
            .collect();
        let (mut start, mut end) = (Snapshot::default(), Snapshot::default());
        for h in handles {
            let (mut s0, fluid, mut s, g) = h.join().expect("a rank panicked");
            assert!(!s0.is_empty() && s0.len() < whole.len(), "{what}: a rank holds {} of {}", s0.len(), whole.len());
            assert_eq!(fluid, whole.fluid_count(), "{what}: the fluid of the whole case");
            start.append(&mut s0);
            end.append(&mut s);
            assert_eq!(bits(&g), bits(&g1), "{what}: gauges");
        }
        let mut ids = start.id.clone();
        ids.sort_unstable();
        assert_eq!(ids, whole.id, "{what}: the ranks hold every particle once at the start");
        for (i, &id) in start.id.iter().enumerate() {
            // A snapshot's position is its cell's centre plus a float32 offset: the fill's to
            // within that offset's rounding.
            let (p, q) = (whole.pos[id as usize], start.pos[i]);
            assert!((0..3).all(|a| (p[a] - q[a]).abs() < 1e-6), "{what}: particle {id} at {q:?}, filled at {p:?}");
        }
        assert_same_particles(&s1, &end, &what);
    }
}
