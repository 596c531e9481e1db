//! The launch of the mDBC pass (`mdbc_kernel`, twin of `surge-cpu`'s `mdbc` pass).

use super::{cfg, fail, CudaBackend};
use cudarc::driver::PushKernelArg;

impl CudaBackend {
    /// Queue the mDBC pass (no wait): the boundary particles of `mdbc_range` (owned, and the
    /// copies within the stencil reach of them) take their density and viscous velocity from
    /// their ghost nodes. Nothing without mDBC (the kernel is not compiled) or with an empty
    /// range. Comes before the force pass on the same stream, which reads what it writes.
    pub(super) fn launch_mdbc(&mut self) -> Result<(), String> {
        let range = self.mdbc_range.clone();
        let CudaBackend { stream, k, pos, vel, cell, info, wall, mdbc, cell_start, win, .. } = self;
        let (Some(kernel), Some(wall), Some(mdbc)) = (k.mdbc.as_ref(), wall.as_ref(), mdbc.as_mut()) else {
            return Ok(());
        };
        if range.is_empty() {
            return Ok(());
        }
        let (first, count) = (range.start as i32, range.len() as i32);
        let (wlo, whi) = win.window;
        let mut b = stream.launch_builder(kernel);
        b.arg(&first).arg(&count).arg(&wlo).arg(&whi);
        b.arg(&*pos).arg(vel).arg(&*cell).arg(&*info).arg(wall).arg(&*cell_start).arg(mdbc);
        // SAFETY: argument types match mdbc_kernel; first + count <= n; `wall` and `mdbc` hold
        // every particle (allocated for mDBC cases, grown with the others).
        unsafe { b.launch(cfg(range.len())) }.map_err(|e| fail("mdbc_kernel", e))?;
        Ok(())
    }
}
