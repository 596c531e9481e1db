//! Run-time compilation of kernels/ with NVRTC. The case's options become `-D` switches and
//! its constants are inlined as float literals, so only the combination a case uses is built,
//! with no branch on a disabled option. PTX is cached on disk by a hash of the sources, the
//! defines and the architecture.

use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
use std::collections::BTreeMap;
use std::path::PathBuf;
use surge_core::case::{Boundary, Diffusion, Shifting, Slip, Viscosity};
use surge_core::config::{KernelKind, Scheme, Traversal};
use surge_core::grid::Grid;
use surge_core::physics::constants::Constants;
use surge_core::Case;

/// The kernel sources, embedded in the binary: (include name, text).
pub const SOURCES: &[(&str, &str)] = &[
    ("step.cu", include_str!("../../../kernels/step.cu")),
    ("physics/vec.cuh", include_str!("../../../kernels/physics/vec.cuh")),
    ("physics/kernel.cuh", include_str!("../../../kernels/physics/kernel.cuh")),
    ("physics/eos.cuh", include_str!("../../../kernels/physics/eos.cuh")),
    ("physics/viscosity.cuh", include_str!("../../../kernels/physics/viscosity.cuh")),
    ("physics/wall_function.cuh", include_str!("../../../kernels/physics/wall_function.cuh")),
    ("physics/pair.cuh", include_str!("../../../kernels/physics/pair.cuh")),
    ("physics/mdbc.cuh", include_str!("../../../kernels/physics/mdbc.cuh")),
    ("physics/loads.cuh", include_str!("../../../kernels/physics/loads.cuh")),
    ("loads.cu", include_str!("../../../kernels/loads.cu")),
];

/// `step.cu` with every `#include "..."` replaced by the embedded file, each file once.
pub fn source() -> String {
    let mut out = String::new();
    let mut seen = Vec::new();
    expand("step.cu", "", &mut out, &mut seen);
    out
}

fn expand(name: &str, dir: &str, out: &mut String, seen: &mut Vec<String>) {
    let full = if dir.is_empty() || name.contains('/') { name.to_string() } else { format!("{dir}/{name}") };
    if seen.contains(&full) {
        return;
    }
    seen.push(full.clone());
    let text = SOURCES
        .iter()
        .find(|(n, _)| *n == full)
        .map(|(_, t)| *t)
        .unwrap_or_else(|| panic!("kernel source {full} is not embedded"));
    let here = full.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
    for line in text.lines() {
        let t = line.trim();
        if let Some(inc) = t.strip_prefix("#include \"").and_then(|r| r.strip_suffix('"')) {
            expand(inc, here, out, seen);
        } else if t != "#pragma once" {
            out.push_str(line);
            out.push('\n');
        }
    }
}

/// A float32 constant as a C literal that reads back to the same float.
fn lit(x: f32) -> String {
    format!("{x:e}f")
}

/// Whether the mDBC pass writes a wall particle's viscous velocity into its velocity buffer
/// (`MDBC_IN_VEL`) instead of a buffer of its own: mDBC walls that never move (no moving
/// solid or floating body, every wall's velocity zero) and no force gauge. Such a wall
/// particle's own velocity is zero, so the force pass needs no second load for a boundary
/// neighbour (its mDBC velocity and density in one 16-byte read) and the mDBC buffer (16
/// bytes a particle) is not allocated; the update puts the velocity back to zero, so
/// snapshots, checkpoints and migrations carry what the CPU's buffers hold. A force gauge
/// reads the mDBC velocities after the update, so its cases keep the buffer.
pub fn mdbc_in_vel(case: &Case) -> bool {
    case.boundary.is_mdbc()
        && case.moving_solids() == 0
        && case.walls.iter().all(|w| w.velocity == [0.0; 3])
        && !case.gauges.iter().any(|g| matches!(g, surge_core::case::Gauge::Force { .. }))
}

/// Resident blocks of 256 threads a multiprocessor the force kernel is compiled for
/// (`__launch_bounds__`): 6, so that ptxas keeps it to 40 registers (a few spilled) and the
/// occupancy of 75 % hides the latency of this issue-bound kernel (H100: 11.25 -> 9.41 ms a
/// step on the 4.45M-particle benchmark). With the wall function (`wall_fn`) its eight sums
/// spill there (ptxas for sm_90: 132 bytes against 32), so 5 (48 registers, 64 bytes): on one
/// H200, spheric_test2_gate.toml at dp 0.006 over the developed flow, 11.15 -> 10.49 ms a
/// step (4 blocks: 10.72; docs/PERFORMANCE.md, "The wall function's registers"). The count
/// changes the registers ptxas allocates, not the operations, so not the bits.
/// `SURGE_CUDA_MIN_BLOCKS` overrides it (tuning).
pub fn forces_min_blocks(wall_fn: bool) -> u32 {
    min_blocks("SURGE_CUDA_MIN_BLOCKS", if wall_fn { 5 } else { 6 })
}

/// Resident blocks a multiprocessor the mDBC ghost pass is compiled for: 4 (its 91 registers
/// held to 64; kernels/step.cu, mdbc_kernel). `SURGE_CUDA_MDBC_MIN_BLOCKS` overrides it.
pub fn mdbc_min_blocks() -> u32 {
    min_blocks("SURGE_CUDA_MDBC_MIN_BLOCKS", 4)
}

/// A kernel's `__launch_bounds__` block count: the environment variable `var` where it holds
/// a whole number (tuning), else `default`.
fn min_blocks(var: &str, default: u32) -> u32 {
    std::env::var(var).ok().and_then(|v| v.trim().parse::<u32>().ok()).unwrap_or(default)
}

/// The cell table's bins a cell on the GPU (`TABLE_BINS`): two (the fluid's and the
/// boundary's) where twice the whole grid's cells fit in the 32-bit sort keys, else one with a
/// byte of fluid count a cell (5 bytes a cell instead of 8, 0.5 % more time a step); the
/// order and the results are the same. `SURGE_CUDA_TABLE_BINS=1` takes one bin on any grid
/// (tests, and memory over speed); a device whose particles fit its memory only with one
/// takes it too (`CudaBackend`'s load, which sets `TABLE_BINS` itself).
pub fn table_bins(grid: &Grid) -> usize {
    let forced = std::env::var("SURGE_CUDA_TABLE_BINS").ok().is_some_and(|v| v.trim() == "1");
    if !forced && 2 * grid.whole().cell_count() + 2 <= u32::MAX as usize {
        2
    } else {
        1
    }
}

/// Whether the GPU keeps a particle's id and kind in one word (`INFO_PACKED`: the kind in its
/// top two bits, 4 bytes a particle less): a case without open boundaries (whose inlets make
/// new ids) whose `ids` (the whole fill's particles: ids are 0..ids) lie below 2^30.
/// `SURGE_CUDA_INFO_PACKED=0` keeps two words.
pub fn info_packed(case: &Case, ids: u64) -> bool {
    let off = std::env::var("SURGE_CUDA_INFO_PACKED").ok().is_some_and(|v| v.trim() == "0");
    !off && case.open.is_empty() && ids <= 1 << 30
}

/// The `-D` defines of a case on a grid, its particles' ids below `ids` ([`info_packed`]):
/// option switches (`MDBC`: 0 DBC, 1 mDBC no-slip, 2 mDBC free slip, 3 mDBC with the
/// wall's velocity; `MDBC_OTHER_SLIP`:
/// solids of the other slip), and the case's
/// [`Constants`] (the values the CPU uses) as float literals.
pub fn defines(case: &Case, grid: &Grid, ids: u64) -> BTreeMap<&'static str, String> {
    let mut d = BTreeMap::new();
    let c = Constants::of(case);
    let kernel = match case.kernel {
        KernelKind::WendlandC2 => "1",
        KernelKind::CubicSpline => "2",
    };
    d.insert("KERNEL", kernel.into());
    d.insert("DIM", case.dim.to_string());
    d.insert("H", lit(c.h));
    d.insert("INV_H", lit(c.kernel[0]));
    d.insert("A_W", lit(c.kernel[1]));
    d.insert("A_F", lit(c.kernel[2]));
    d.insert("SUPPORT2", lit(c.support2));
    d.insert("ETA2", lit(c.eta2));
    d.insert("C0", lit(c.c0));
    d.insert("RHO0", lit(c.rho0));
    // Every particle's mass (the CPU's `case.mass as f32`): the GPU keeps the cell in pos.w.
    d.insert("MASS", lit(case.mass as f32));
    d.insert("INV_RHO0", lit(1.0 / c.rho0));
    d.insert("TAIT_B", lit(c.tait_b));
    d.insert("INV_B", lit(c.inv_b));
    d.insert("GAMMA", lit(c.gamma));
    d.insert("INV_GAMMA", lit(c.inv_gamma));
    d.insert("GAMMA_IS_7", u8::from(c.gamma == 7.0).to_string());
    d.insert("PB", lit(c.pb));
    for (k, v) in ["GX", "GY", "GZ"].iter().zip([c.g.x, c.g.y, c.g.z]) {
        d.insert(k, lit(v));
    }
    match case.viscosity {
        Viscosity::Artificial { .. } => {
            d.insert("VISC", "1".into());
            d.insert("ALPHA", lit(c.alpha));
            d.insert("ALPHA_WALL", lit(c.alpha_wall));
        }
        Viscosity::Laminar { .. } => {
            d.insert("VISC", "2".into());
            d.insert("NU", lit(c.nu));
            d.insert("NU_WALL", lit(c.nu_wall));
        }
    }
    let diff = match case.diffusion {
        Diffusion::None => "0",
        Diffusion::MolteniColagrossi { .. } => "1",
        Diffusion::Fourtakas { .. } => "2",
    };
    d.insert("DIFF", diff.into());
    d.insert("DELTA_H_C0", lit(c.delta_h_c0));
    d.insert("SHIFT", u8::from(case.shifting != Shifting::None).to_string());
    d.insert("SHIFT_AH", lit(c.shift_ah));
    d.insert("SHIFT_THRESHOLD", lit(c.shift_threshold));
    let mdbc = match case.boundary {
        Boundary::Dbc => "0",
        Boundary::Mdbc { slip: Slip::No } => "1",
        Boundary::Mdbc { slip: Slip::Free } => "2",
        Boundary::Mdbc { slip: Slip::Wall } => "3",
    };
    d.insert("MDBC", mdbc.into());
    // The wall function (physics.wall_function): its viscosity and smallest distance.
    let wall_fn = c.wall_nu > 0.0;
    d.insert("WALL_FN", u8::from(wall_fn).to_string());
    d.insert("WALL_NU", lit(c.wall_nu));
    d.insert("WALL_Y_MIN", lit(c.wall_y_min));
    d.insert("MDBC_IN_VEL", u8::from(mdbc_in_vel(case)).to_string());
    // The solids whose slip is the other one: their ids, `lo, hi` a range.
    d.insert("MDBC_OTHER_SLIP", case.mdbc_other_slip.len().to_string());
    if !case.mdbc_other_slip.is_empty() {
        let ids: Vec<String> = case.mdbc_other_slip.iter().map(|(_, r)| format!("{}u, {}u", r.start, r.end)).collect();
        d.insert("MDBC_OTHER_SLIP_IDS", ids.join(", "));
    }
    // The CPU's thresholds of the ghost-node solve, so the twins cannot drift apart.
    d.insert("MDBC_DET_MIN", format!("{:e}", surge_core::physics::mdbc::DET_MIN));
    d.insert("MDBC_SHEPARD_MIN", lit(surge_core::physics::mdbc::SHEPARD_MIN));
    d.insert("SCHEME", if case.scheme == Scheme::Symplectic { "1" } else { "2" }.into());
    // Moving solids (their moves come as a table with each update) and damping zones (a
    // table of doubles, printed so that they read back exactly).
    d.insert("MOTION", u8::from(case.moving_solids() > 0).to_string());
    d.insert("DAMPING", case.damping.len().to_string());
    // Open boundaries (issue 15): their table comes with each force pass and rebuild.
    d.insert("OPEN", case.open.len().to_string());
    if !case.damping.is_empty() {
        let rows: Vec<String> = case
            .damping
            .iter()
            .map(|z| {
                let a = z.axis;
                format!(
                    "{{{:?}, {:?}, {:?}, {:?}, {:?}, {:?}}}",
                    a as f64, grid.origin[a], grid.cell[a], z.start, z.end, z.strength
                )
            })
            .collect();
        d.insert("DAMPING_ZONES", format!("{{{}}}", rows.join(", ")));
    }
    for a in 0..3 {
        d.insert(["CSX", "CSY", "CSZ"][a], lit(grid.cell[a] as f32));
        d.insert(["NX", "NY", "NZ"][a], grid.n[a].to_string());
        d.insert(["PERX", "PERY", "PERZ"][a], u8::from(grid.periodic[a]).to_string());
    }
    d.insert("R", grid.reach.to_string());
    // The walks of rows trimmed to the support (kernels/step.cu, stencil_rows): how far a
    // candidate lies at most from its cell's centre along each axis (half the cell, half the
    // skin, 1e-3 of the support for rounding). `SURGE_CUDA_ROW_TRIM=0` walks whole rows (the
    // same sums: a measurement's switch).
    let trim = std::env::var("SURGE_CUDA_ROW_TRIM").map_or(true, |v| v.trim() != "0");
    d.insert("ROW_TRIM", u8::from(trim).to_string());
    for a in 0..3 {
        let ext = 0.5 * grid.cell[a] + 0.5 * grid.skin + 1e-3 * grid.support;
        d.insert(["ROW_EXT_X", "ROW_EXT_Y", "ROW_EXT_Z"][a], lit(ext as f32));
    }
    // The cell table's layout, and the cells of a layer of the split axis (where a window's
    // table of one bin a cell keeps its fluid counts).
    d.insert("TABLE_BINS", table_bins(grid).to_string());
    d.insert("LAYER_CELLS", grid.layer_cells().to_string());
    d.insert("INFO_PACKED", u8::from(info_packed(case, ids)).to_string());
    d.insert("FORCES_MIN_BLOCKS", forces_min_blocks(wall_fn).to_string());
    d.insert("MDBC_MIN_BLOCKS", mdbc_min_blocks().to_string());
    let traversal = match traversal(case, grid) {
        Traversal::Ranges => "1",
        Traversal::Pencil => "2",
        Traversal::Cta => "3",
        Traversal::Cells | Traversal::Auto => "0",
    };
    d.insert("TRAVERSAL", traversal.into());
    for (k, v) in ["O0", "O1", "O2"].iter().zip(grid.order) {
        d.insert(k, v.to_string());
    }
    d
}

/// The neighbour traversal the kernels of `case` on `grid` use: `[gpu] traversal` with
/// `auto` resolved (ranges run along the key's fastest axis, which must have walls).
pub fn traversal(case: &Case, grid: &Grid) -> Traversal {
    case.traversal.resolve(case.dim, grid.periodic[grid.rows_axis()])
}

/// [`traversal`] in words, with its rows' axis and why it differs from `[gpu] traversal`
/// where it does (the log of a run and `surge check` print it).
pub fn traversal_note(case: &Case, grid: &Grid) -> String {
    let t = traversal(case, grid);
    let name = match t {
        Traversal::Cells | Traversal::Auto => "cells".to_string(),
        _ => format!("{}, rows along {}", t.name(), ["x", "y", "z"][grid.rows_axis()]),
    };
    match case.traversal {
        Traversal::Auto => format!("{name} (auto: ranges in 3D, cells in 2D)"),
        asked if asked != t => format!("{name} (ranges, pencil and cta need walls along the cell key's fastest axis)"),
        _ => name,
    }
}

/// FNV-1a, 64 bits: a stable hash for cache keys (not for security).
fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Where compiled PTX is kept: `ptx/` in [`surge_core::cache_base`].
fn cache_dir() -> Option<PathBuf> {
    Some(surge_core::cache_base()?.join("ptx"))
}

/// Approximate division, reciprocal and square root (`--use_fast_math`): the pair body has
/// several of each, and their IEEE-exact forms are multi-instruction sequences in a kernel
/// that is bound by instruction issue. Results stay within the CPU-parity tolerance (see
/// tests/gpu_parity.rs). `SURGE_CUDA_FAST_MATH=0` compiles IEEE-exact arithmetic instead.
pub fn fast_math() -> bool {
    std::env::var("SURGE_CUDA_FAST_MATH").map_or(true, |v| v != "0")
}

/// Compiled kernels and whether they came from the cache.
pub struct Compiled {
    /// PTX text.
    pub ptx: String,
    /// True when read from the disk cache.
    pub cached: bool,
    /// The cache file, when caching is possible.
    pub path: Option<PathBuf>,
}

/// Compile the kernels for `defines` and virtual architecture `arch` (e.g. `compute_90`).
pub fn compile(defines: &BTreeMap<&'static str, String>, arch: &'static str) -> Result<Compiled, String> {
    let src = source();
    let mut options: Vec<String> = defines.iter().map(|(k, v)| format!("-D{k}={v}")).collect();
    options.push("--std=c++17".into());
    if fast_math() {
        options.push("--use_fast_math".into());
    }
    let mut h = fnv1a(src.as_bytes(), 0xcbf29ce484222325);
    for o in &options {
        h = fnv1a(o.as_bytes(), h);
    }
    h = fnv1a(arch.as_bytes(), h);
    let path = cache_dir().map(|d| d.join(format!("{h:016x}.ptx")));
    if let Some(p) = &path {
        if let Ok(ptx) = std::fs::read_to_string(p) {
            return Ok(Compiled { ptx, cached: true, path });
        }
    }
    let opts = CompileOptions { arch: Some(arch), options, name: Some("step.cu".into()), ..Default::default() };
    let ptx = compile_ptx_with_opts(&src, opts)
        .map_err(|e| format!("NVRTC could not compile kernels/step.cu: {e:?}"))?
        .to_src();
    if let Some(p) = &path {
        // The cache is an optimisation: failing to write it is not an error.
        if std::fs::create_dir_all(p.parent().expect("cache file has a folder")).is_ok() {
            let tmp = p.with_extension("ptx.tmp");
            if std::fs::write(&tmp, &ptx).is_ok() {
                let _ = std::fs::rename(&tmp, p);
            }
        }
    }
    Ok(Compiled { ptx, cached: false, path })
}

/// The virtual architecture NVRTC targets for a compute capability.
pub fn arch_for(cc: (i32, i32)) -> &'static str {
    match cc {
        (9, 0) => "compute_90",
        (8, 9) => "compute_89",
        (8, 6) => "compute_86",
        (8, 0) => "compute_80",
        (7, 5) => "compute_75",
        (10, 0) => "compute_100",
        (12, 0) => "compute_120",
        (m, _) if m >= 10 => "compute_100",
        (m, _) if m >= 9 => "compute_90",
        (8, _) => "compute_80",
        _ => "compute_75",
    }
}
