//! Several CUDA devices give bitwise the particles of one (needs a GPU; both "devices" run
//! on GPU 0, each a backend of its own), through the host and GPU to GPU (device blocks;
//! with two GPUs, the second device runs on GPU 1 there, so the copies are peer copies).
//! Skipped without a GPU unless `SURGE_REQUIRE_GPU` is set.

use surge_core::backend::{Backend, DeviceBlock, Link, Part, Snapshot, Update};
use surge_core::buffers::ParticleState;
use surge_core::config::Scheme;
use surge_core::decomp::{Side, SliceMap};
use surge_core::geometry::fill;
use surge_core::Case;
use surge_cuda::CudaBackend;

const DAM: &str = r#"
dp = 0.02
[domain]
min = [-0.2, -0.2]
max = [2.2, 1.0]
[physics]
body_force = [0.0, -9.81]
[time]
end = 1.0
[[fluid]]
min = [0.0, 0.0]
max = [0.6, 0.5]
[[wall]]
min = [0.0, 0.0]
max = [2.0, 0.8]
"#;

/// One force pass over devices `devs` side by side (neighbours by index), the edge values
/// through the host or, when `peer`, GPU to GPU.
fn forces<B: Backend>(devs: &mut [B], peer: bool) {
    let n = devs.len();
    for d in devs.iter_mut() {
        d.forces(Part::Edges).unwrap();
    }
    let mut edges: Vec<[Vec<[f32; 4]>; 2]> = Vec::new();
    let mut blocks: Vec<[Option<DeviceBlock>; 2]> = Vec::new();
    for (i, d) in devs.iter_mut().enumerate() {
        let mut e = [Vec::new(), Vec::new()];
        let mut b = [None, None];
        for s in Side::BOTH {
            let neighbour = match s {
                Side::Left => i > 0,
                Side::Right => i + 1 < n,
            };
            if peer && neighbour {
                b[s as usize] = Some(d.edge_forces_peer(s).unwrap().expect("CUDA gives device blocks"));
            } else {
                d.edge_forces(s, &mut e[s as usize]).unwrap();
            }
        }
        edges.push(e);
        blocks.push(b);
    }
    for d in devs.iter_mut() {
        d.forces(Part::Inner).unwrap();
    }
    for (i, d) in devs.iter_mut().enumerate() {
        for (s, j) in [(Side::Left, i.wrapping_sub(1)), (Side::Right, i + 1)] {
            if j >= n {
                continue;
            }
            let from = s.opposite() as usize;
            match blocks[j][from].take() {
                Some(b) => {
                    d.set_copy_forces_peer(s, b).unwrap();
                }
                None => d.set_copy_forces(s, &edges[j][from]).unwrap(),
            }
        }
        d.force_stats().unwrap();
    }
}

fn step<B: Backend>(devs: &mut [B], scheme: Scheme, dt: f64, peer: bool) {
    forces(devs, peer);
    match scheme {
        Scheme::Symplectic => {
            devs.iter_mut().for_each(|d| {
                d.update(Update::Predictor, dt).unwrap();
            });
            forces(devs, peer);
            devs.iter_mut().for_each(|d| {
                d.update(Update::Corrector, dt).unwrap();
            });
        }
        Scheme::Verlet => devs.iter_mut().for_each(|d| {
            d.update(Update::Verlet, dt).unwrap();
        }),
    }
}

fn rebuild<B: Backend>(devs: &mut [B], map: &SliceMap, rekey: bool, peer: bool) {
    let n = devs.len();
    if peer {
        let mut out: Vec<[Option<DeviceBlock>; 2]> = Vec::new();
        for (i, d) in devs.iter_mut().enumerate() {
            let mut host = [ParticleState::default(), ParticleState::default()];
            let links = [Link::Process; 2];
            out.push(d.rebuild_begin_peer(map, i, rekey, links, &mut host).unwrap().expect("CUDA gives device blocks"));
        }
        for (i, d) in devs.iter_mut().enumerate() {
            let from_left = if i > 0 { out[i - 1][Side::Right as usize].take() } else { None };
            let from_right = if i + 1 < n { out[i + 1][Side::Left as usize].take() } else { None };
            d.rebuild_end_peer([from_left, from_right], Default::default()).unwrap();
        }
        return;
    }
    let mut out: Vec<[ParticleState; 2]> = Vec::new();
    for (i, d) in devs.iter_mut().enumerate() {
        let mut o = [ParticleState::default(), ParticleState::default()];
        d.rebuild_begin(map, i, rekey, &mut o).unwrap();
        out.push(o);
    }
    for (i, d) in devs.iter_mut().enumerate() {
        let set = out[i][0].buffers();
        let empty = || ParticleState::empty(set, d.grid());
        let from_left = if i > 0 { std::mem::take(&mut out[i - 1][Side::Right as usize]) } else { empty() };
        let from_right = if i + 1 < n { std::mem::take(&mut out[i + 1][Side::Left as usize]) } else { empty() };
        d.rebuild_end([from_left, from_right]).unwrap();
    }
}

fn by_id<B: Backend>(devs: &mut [B]) -> Snapshot {
    let mut all = Snapshot::default();
    for d in devs.iter_mut() {
        let mut s = Snapshot::default();
        d.snapshot(&mut s).unwrap();
        all.append(&mut s);
    }
    let o = all.order_by_id();
    Snapshot {
        id: o.iter().map(|&i| all.id[i]).collect(),
        kind: o.iter().map(|&i| all.kind[i]).collect(),
        pos: o.iter().map(|&i| all.pos[i]).collect(),
        vel: o.iter().map(|&i| all.vel[i]).collect(),
        rho: o.iter().map(|&i| all.rho[i]).collect(),
        p: o.iter().map(|&i| all.p[i]).collect(),
    }
}

#[test]
fn two_devices_give_the_particles_of_one_bitwise() {
    let required = std::env::var_os("SURGE_REQUIRE_GPU").is_some();
    let gpus = match surge_cuda::gpus().and_then(|g| surge_cuda::nvrtc_version().map(|_| g.len())) {
        Ok(g) => g,
        Err(e) => {
            assert!(!required, "a GPU is required here: {e}");
            eprintln!("skipped: {e}");
            return;
        }
    };
    for (scheme, peer) in [("symplectic", false), ("verlet", false), ("symplectic", true), ("verlet", true)] {
        // GPU to GPU, the second device on another GPU where there is one.
        let second = if peer { gpus.min(2) - 1 } else { 0 };
        let what = if peer { format!("{scheme}, GPU to GPU (GPUs 0 and {second})") } else { scheme.to_string() };
        let case = Case::from_str(DAM, &[format!("time.scheme=\"{scheme}\"")]).unwrap();
        let filled = fill(&case);
        let mut one = vec![CudaBackend::new(&case, &filled, 0).unwrap()];
        let whole = one[0].grid().clone();
        let axis = whole.split_axis();
        let layer = |i: usize| whole.locate(filled.pos[i]).0[axis];
        let mut weights = vec![0u64; whole.layers() as usize];
        (0..filled.len()).for_each(|i| weights[layer(i) as usize] += 1);
        let mut map = SliceMap::balanced(&weights, 2, whole.reach).unwrap();
        let mut two: Vec<CudaBackend> = (0..2)
            .map(|d| CudaBackend::new(&case, &filled.subset(|i| map.owner(layer(i)) == d), d * second).unwrap())
            .collect();
        rebuild(&mut two, &map, true, peer);
        assert_eq!(two.iter().map(|d| d.len()).sum::<usize>(), filled.len());
        let solo = SliceMap::single(whole.layers(), whole.reach);
        let dt = case.initial_dt();
        for s in 0..60 {
            step(&mut one, case.scheme, dt, false);
            step(&mut two, case.scheme, dt, peer);
            if s % 10 == 9 {
                rebuild(&mut one, &solo, true, false);
                // Every other rebuild the boundary moves by a layer (the load balancer).
                if s % 20 == 19 {
                    map.bounds[1] += if s % 40 == 19 { 1 } else { -1 };
                }
                rebuild(&mut two, &map, true, peer);
            }
        }
        let (a, b) = (by_id(&mut one), by_id(&mut two));
        assert_eq!(a.id, b.id, "{what}: the same particles");
        for i in 0..a.len() {
            assert!(
                a.pos[i] == b.pos[i] && a.vel[i] == b.vel[i] && a.rho[i].to_bits() == b.rho[i].to_bits(),
                "{what}: particle {} differs: {:?} {:?} / {:?} {:?}",
                a.id[i],
                a.pos[i],
                a.vel[i],
                b.pos[i],
                b.vel[i]
            );
        }
        // A checkpoint of two devices, restarted on one: the state survives bitwise.
        let mut st = ParticleState::default();
        for d in two.iter_mut() {
            let mut part = ParticleState::default();
            d.export_state(&mut part).unwrap();
            if st.is_empty() {
                st = part;
            } else {
                st.append(part).unwrap();
            }
        }
        assert_eq!(st.len(), filled.len());
        one[0].import_state(st.clone()).unwrap();
        rebuild(&mut one, &solo, false, false);
        let mut back = ParticleState::default();
        one[0].export_state(&mut back).unwrap();
        let order = |s: &ParticleState| {
            let mut o: Vec<usize> = (0..s.len()).collect();
            o.sort_by_key(|&i| s.arrays().info[i][0]);
            o
        };
        let (o1, o2) = (order(&st), order(&back));
        for (&i, &j) in o1.iter().zip(&o2) {
            assert_eq!(st.arrays().pos[i], back.arrays().pos[j]);
            assert_eq!(st.arrays().cell[i], back.arrays().cell[j]);
            assert_eq!(st.arrays().vel[i], back.arrays().vel[j]);
        }
    }
}
