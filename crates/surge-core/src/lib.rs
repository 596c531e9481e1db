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
pub mod step;
mod vec;
pub mod waves;

pub use case::Case;
pub use config::CaseError;
pub use vec::V3;
