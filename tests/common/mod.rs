//! Shared helpers of the physics tests: loading shipped cases, analytic solutions.
#![allow(dead_code)]

use std::f64::consts::PI;
use std::path::Path;
use surge_core::backend::Snapshot;
use surge_core::buffers::Kind;
use surge_core::Case;
use surge_runtime::{BackendChoice, DeviceRequest, Simulation};

/// The shipped configs: beside the sources where the test was built, else in the current
/// directory (test binaries copied to a GPU host run from the repository root there).
pub fn configs_dir() -> std::path::PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    if built.is_dir() {
        built
    } else {
        std::env::current_dir().expect("current directory").join("configs")
    }
}

/// A file of the repository by its path from the root: beside the sources where the test
/// was built, else under the current directory (as [`configs_dir`]).
pub fn repo_file(rel: &str) -> std::path::PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    if built.exists() {
        built
    } else {
        std::env::current_dir().expect("current directory").join(rel)
    }
}

/// Load a shipped case with `--set`-style overrides.
pub fn case(name: &str, overrides: &[&str]) -> Case {
    let path = configs_dir().join(name);
    Case::from_file(&path, &with_traversal(overrides)).unwrap_or_else(|e| panic!("{e}"))
}

/// The overrides, and `gpu.traversal=T` where `SURGE_TEST_TRAVERSAL=T` asks the GPU's tests
/// for a neighbour traversal other than the case's (scripts/gpu_check.sh; no effect on the
/// CPU).
fn with_traversal(overrides: &[&str]) -> Vec<String> {
    let mut o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    if let Ok(t) = std::env::var("SURGE_TEST_TRAVERSAL") {
        o.push(format!("gpu.traversal={t}"));
    }
    o
}

/// Load a case of the repository by its path from the root (e.g. `tests/cases/...`) with
/// `--set`-style overrides.
pub fn case_at(rel: &str, overrides: &[&str]) -> Case {
    Case::from_file(&repo_file(rel), &with_traversal(overrides)).unwrap_or_else(|e| panic!("{e}"))
}

/// The backend the physics tests run on: the CPU, or GPU 0 with `SURGE_TEST_BACKEND=cuda`
/// (scripts/gpu_check.sh runs the same tests both ways).
pub fn test_backend() -> BackendChoice {
    match std::env::var("SURGE_TEST_BACKEND").as_deref() {
        Ok("cuda") => BackendChoice::Cuda,
        Ok("cpu") | Err(_) => BackendChoice::Cpu,
        Ok(other) => panic!("SURGE_TEST_BACKEND={other}: expected cpu or cuda"),
    }
}

/// The case on the test backend (`threads` CPU threads on the CPU).
pub fn sim(case: &Case, threads: usize) -> Simulation {
    sim_on(case, test_backend(), threads)
}

/// The case on a given backend.
pub fn sim_on(case: &Case, backend: BackendChoice, threads: usize) -> Simulation {
    surge_runtime::simulation(case, &DeviceRequest::one(backend, threads)).unwrap_or_else(|e| panic!("{e}")).sim
}

/// The case on `n` devices of the test backend: CPU workers of one thread each, or with
/// `SURGE_TEST_BACKEND=cuda` GPUs 0..n (device k on GPU k mod the GPUs visible).
pub fn sim_devices(case: &Case, n: usize) -> Simulation {
    let req = match test_backend() {
        BackendChoice::Cuda => DeviceRequest {
            backend: BackendChoice::Cuda,
            threads: 0,
            workers: 1,
            gpus: surge_runtime::Gpus::List(
                (0..n).map(|k| k % surge_cuda::gpus().map_or(1, |g| g.len().max(1))).collect(),
            ),
            writes: true,
        },
        _ => DeviceRequest::cpu_workers(n, n),
    };
    surge_runtime::simulation(case, &req).unwrap_or_else(|e| panic!("{e}")).sim
}

/// Step until time t is reached: steps are never shortened (as `surge run` steps), so the
/// run ends at the first step end at or after t.
pub fn run_to(sim: &mut Simulation, t: f64) {
    while sim.time() < t {
        sim.step(f64::INFINITY).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The snapshot's particles in id order.
pub fn by_id(s: &Snapshot) -> Snapshot {
    let o = s.order_by_id();
    Snapshot {
        id: o.iter().map(|&i| s.id[i]).collect(),
        kind: o.iter().map(|&i| s.kind[i]).collect(),
        pos: o.iter().map(|&i| s.pos[i]).collect(),
        vel: o.iter().map(|&i| s.vel[i]).collect(),
        rho: o.iter().map(|&i| s.rho[i]).collect(),
        p: o.iter().map(|&i| s.p[i]).collect(),
    }
}

/// Assert two snapshots hold bitwise the same particles (compared by id).
pub fn assert_same_particles(a: &Snapshot, b: &Snapshot, what: &str) {
    let (a, b) = (by_id(a), by_id(b));
    assert_eq!(a.id, b.id, "{what}: not the same particles");
    for i in 0..a.len() {
        assert_eq!(a.pos[i].map(f64::to_bits), b.pos[i].map(f64::to_bits), "{what}: position of particle {}", a.id[i]);
        assert_eq!(a.vel[i].map(f32::to_bits), b.vel[i].map(f32::to_bits), "{what}: velocity of particle {}", a.id[i]);
        assert_eq!(a.rho[i].to_bits(), b.rho[i].to_bits(), "{what}: density of particle {}", a.id[i]);
    }
}

/// Indices of the fluid particles of a snapshot.
pub fn fluid(s: &Snapshot) -> impl Iterator<Item = usize> + '_ {
    (0..s.len()).filter(|&i| s.kind[i] == Kind::Fluid as u8)
}

/// Transient plane Poiseuille flow from rest (Morris, Fox & Zhu 1997, eq. 22): plates at
/// y = 0 and y = l, body force f along x, kinematic viscosity nu.
pub fn poiseuille(y: f64, t: f64, f: f64, nu: f64, l: f64) -> f64 {
    let mut u = f / (2.0 * nu) * y * (l - y);
    for n in 0..200 {
        let k = (2 * n + 1) as f64;
        u -= 4.0 * f * l * l / (nu * PI.powi(3) * k.powi(3))
            * (k * PI * y / l).sin()
            * (-k * k * PI * PI * nu * t / (l * l)).exp();
    }
    u
}

/// Transient Couette flow from rest (Morris, Fox & Zhu 1997, eq. 23): the plate at y = l
/// moves at v0 from t = 0, the plate at y = 0 is fixed.
pub fn couette(y: f64, t: f64, v0: f64, nu: f64, l: f64) -> f64 {
    let mut u = v0 * y / l;
    for n in 1..400 {
        let nf = n as f64;
        u += 2.0 * v0 / (nf * PI)
            * (-1f64).powi(n)
            * (nf * PI * y / l).sin()
            * (-nu * nf * nf * PI * PI * t / (l * l)).exp();
    }
    u
}

/// Relative L2 error of the fluid x-velocity against an analytic profile u(y).
pub fn l2_error(s: &Snapshot, u: impl Fn(f64) -> f64) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for i in fluid(s) {
        let ua = u(s.pos[i][1]);
        num += (s.vel[i][0] as f64 - ua).powi(2);
        den += ua * ua;
    }
    (num / den).sqrt()
}

/// Kinetic energy per unit mass summed over the fluid (equal masses).
pub fn kinetic_energy(s: &Snapshot) -> f64 {
    fluid(s).map(|i| s.vel[i].iter().map(|v| (*v as f64).powi(2)).sum::<f64>()).sum::<f64>() / 2.0
}

/// A fresh, empty folder for one test, removed when the test passes and kept for a look when
/// it fails.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    /// `<temp>/surge-<name>-<pid>`, emptied.
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("surge-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}
