//! surge-core: the model shared by every backend. Case configuration, geometry fill,
//! particle buffers, the cell grid, physics formulas as plain functions, the step plan and
//! the backend trait. No threads, devices or communication here.
#![warn(missing_docs)]

pub mod backend;
pub mod bodies;
pub mod buffers;
pub mod case;
pub mod config;
pub mod decomp;
pub mod gauge;
pub mod geometry;
pub mod grid;
pub mod hash;
pub mod mesh;
pub mod motion;
pub mod open;
pub mod physics;
pub mod shape;
pub mod staging;
pub mod step;
mod vec;
pub mod waves;

pub use case::Case;
pub use config::CaseError;
pub use vec::V3;

/// surge's cache folder: `$SURGE_CACHE_DIR`, else `$XDG_CACHE_HOME/surge`, else
/// `~/.cache/surge`; `None` when none can be named (then nothing is cached). The CUDA backend
/// keeps compiled kernels in `ptx/`, `surge bench` its developed flows in `bench/`.
pub fn cache_base() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    std::env::var_os("SURGE_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("surge")))
        .or_else(|| std::env::var_os("HOME").map(|d| PathBuf::from(d).join(".cache").join("surge")))
}
