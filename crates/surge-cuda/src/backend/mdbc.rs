//! The launch of the mDBC pass (`mdbc_kernel`, twin of `surge-cpu`'s `mdbc` pass).

use super::{cfg, fail, CudaBackend};
use cudarc::driver::PushKernelArg;

impl CudaBackend {
    /// At the end of a rebuild (no wait): list in `key` the boundary particles of
    /// `mdbc_range` whose ghost node lies within the support, the ones the pass computes
    /// (`mdbc_list_kernel`), and set the others' values. Nothing without mDBC.
    pub(super) fn list_mdbc(&mut self) -> Result<(), String> {
        let range = self.mdbc_range.clone();
        let CudaBackend { stream, k, vel, info, wall, mdbc, key, mdbc_listed, .. } = self;
        let (Some(kernel), Some(wall), Some(mdbc)) = (k.mdbc_list.as_ref(), wall.as_ref(), mdbc.as_mut()) else {
            return Ok(());
        };
        stream.memset_zeros(mdbc_listed).map_err(|e| fail("clearing the mDBC list", e))?;
        if range.is_empty() {
            return Ok(());
        }
        let (first, count) = (range.start as i32, range.len() as i32);
        let mut b = stream.launch_builder(kernel);
        b.arg(&first).arg(&count).arg(&*vel).arg(&*info).arg(wall).arg(mdbc).arg(key).arg(mdbc_listed);
        // SAFETY: argument types match mdbc_list_kernel; first + count <= n; `key` has room
        // for every held particle, `wall` and `mdbc` hold every particle (allocated for mDBC
        // cases, grown with the others).
        unsafe { b.launch(cfg(range.len())) }.map_err(|e| fail("mdbc_list_kernel", e))?;
        Ok(())
    }

    /// Queue the mDBC pass (no wait): the particles [`Self::list_mdbc`] listed (boundary
    /// particles of `mdbc_range`: owned, and the copies within the stencil reach of them)
    /// take their density and viscous velocity from their ghost nodes. Nothing without mDBC
    /// (the kernel is not compiled) or with an empty range. Comes before the force pass on
    /// the same stream, which reads what it writes. The launch covers the whole range, an
    /// upper bound of the list's length, which only the device knows: the threads past it
    /// return at once.
    pub(super) fn launch_mdbc(&mut self) -> Result<(), String> {
        let range = self.mdbc_range.clone();
        let CudaBackend { stream, k, pos, vel, cell, wall, mdbc, key, mdbc_listed, cell_start, win, .. } = self;
        let (Some(kernel), Some(wall), Some(mdbc)) = (k.mdbc.as_ref(), wall.as_ref(), mdbc.as_mut()) else {
            return Ok(());
        };
        if range.is_empty() {
            return Ok(());
        }
        let (wlo, whi) = win.window;
        let mut b = stream.launch_builder(kernel);
        b.arg(&*key).arg(&*mdbc_listed).arg(&wlo).arg(&whi);
        b.arg(&*pos).arg(vel).arg(&*cell).arg(wall).arg(&*cell_start).arg(mdbc);
        // SAFETY: argument types match mdbc_kernel; the list holds `mdbc_listed` indices below
        // n, at most range.len() of them (list_mdbc, since the last rebuild, which nothing has
        // overwritten: `key` is reused only during rebuilds).
        unsafe { b.launch(cfg(range.len())) }.map_err(|e| fail("mdbc_kernel", e))?;
        Ok(())
    }
}
