//! Physics formulas as plain functions over scalars: no loops, no threads, no devices.
//! Each has a CUDA twin of the same name and argument order in `kernels/physics/`, but for
//! the artificial viscosity and the density diffusions, which the CUDA `fluid_pair` writes
//! inline in the fewest instructions (docs/ARCHITECTURE.md, "The CUDA backend").

pub mod constants;
pub mod diffusion;
pub mod dt;
pub mod eos;
pub mod kernel;
pub mod loads;
pub mod mdbc;
pub mod options;
pub mod pair;
pub mod viscosity;
pub mod wall_function;
