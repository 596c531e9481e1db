//! The launch of the mDBC pass (`mdbc_kernel`, twin of `surge-cpu`'s `mdbc` pass).

use super::{cfg, fail, CudaBackend};
use cudarc::driver::PushKernelArg;

impl CudaBackend {
    /// At the end of a rebuild (no wait): list in `mdbc_list` the boundary particles of
    /// `mdbc_range` whose ghost node lies within the support, the ones the pass computes
    /// (`mdbc_list_kernel`), and set the others' values; then order the list by the cell of
    /// each entry's ghost node into `perm` (`mdbc_ghost_key_kernel` and a counting sort), so
    /// that a warp's lanes share one stencil. Nothing without mDBC. With static walls on a
    /// device alone the ordered list is then kept in `mdbc_list` as each entry's cell and
    /// place in the cell's boundary bin (`mdbc_fix_kernel`: one word an entry, no memory of
    /// its own), and made again only when the window or the owned layers change (or the
    /// buffers grow, or a state is loaded): every other rebuild does nothing here. Making it
    /// waits once on the host, for the check that every entry fits its word.
    pub(super) fn list_mdbc(&mut self) -> Result<(), String> {
        let range = self.mdbc_range.clone();
        let (lo, hi) = self.map.owned(self.me);
        let key = [self.win.window.0, self.win.window.1, lo, hi, self.win.reach];
        if self.mdbc_fixed && self.mdbc_fixed_key == Some(key) {
            return Ok(());
        }
        self.mdbc_fixed_key = None;
        // Kept for a device alone only: in a team a device's copies of its neighbours' wall
        // particles arrive after its first rebuilds, under the same window and layers, so the
        // key above would keep a list made without them (tests/decomposition.rs failed so on
        // the GPU: mdbc_dam_break_3d_on_2_devices_matches_1).
        let alone = self.map.devices() == 1;
        let CudaBackend { stream, k, vel, info, wall, mdbc, mdbc_list, mdbc_listed, dummy_out, .. } = self;
        let (Some(kernel), Some(wall), Some(list)) = (k.mdbc_list.as_ref(), wall.as_ref(), mdbc_list.as_mut()) else {
            return Ok(());
        };
        // Without its buffer (the values in `vel`, compile::mdbc_in_vel) the kernel writes
        // no mDBC values.
        let mdbc = mdbc.as_mut().unwrap_or(dummy_out);
        stream.memset_zeros(mdbc_listed).map_err(|e| fail("clearing the mDBC list", e))?;
        if range.is_empty() {
            return Ok(());
        }
        let (first, count) = (range.start as i32, range.len() as i32);
        let mut b = stream.launch_builder(kernel);
        b.arg(&first).arg(&count).arg(&*vel).arg(&*info).arg(wall).arg(mdbc).arg(list).arg(mdbc_listed);
        // SAFETY: argument types match mdbc_list_kernel; first + count <= n; `list` has room
        // for every held particle, `wall` and `mdbc` (where the kernel writes it) hold every
        // particle (allocated for mDBC cases, grown with the others).
        unsafe { b.launch(cfg(range.len())) }.map_err(|e| fail("mdbc_list_kernel", e))?;
        // Order the list by ghost cell: keys into `force` (free between the rebuild's gathers
        // and the next force pass), a counting sort of them into `perm` (free until the next
        // rebuild) through the mDBC table, as the rebuild sorts the particles. The entries
        // past the list's end get the last key and are skipped, so the first `listed` of
        // `perm` are the list.
        let CudaBackend { stream, k, pos, wall, mdbc_list, perm, force, mdbc_listed, mdbc_table, win, bins, .. } = self;
        let (Some(ghost_key), Some(wall), Some((table, scan)), Some(list)) =
            (k.mdbc_ghost_key.as_ref(), wall.as_ref(), mdbc_table, mdbc_list.as_ref())
        else {
            return Ok(());
        };
        let (wlo, whi) = win.window;
        let dummy = *bins as u32;
        let mut b = stream.launch_builder(ghost_key);
        b.arg(&count).arg(&*mdbc_listed).arg(list).arg(&wlo).arg(&whi).arg(&dummy);
        b.arg(&*pos).arg(wall).arg(&mut *force);
        // SAFETY: argument types match mdbc_ghost_key_kernel; `list` holds the list (at most
        // count entries, mdbc_listed of them), `force` has 4 words a particle, room for count
        // keys; keys are at most bins (the table has bins + 2 values).
        unsafe { b.launch(cfg(range.len())) }.map_err(|e| fail("mdbc_ghost_key_kernel", e))?;
        stream.memset_zeros(table).map_err(|e| fail("clearing the mDBC table", e))?;
        // The entries past the list's end (keys `dummy`: most of the range is fluid) are
        // neither counted nor placed: `perm` past the list's length is never read.
        let mut b = stream.launch_builder(&k.histogram);
        b.arg(&count).arg(&*force).arg(&dummy).arg(&mut *table);
        // SAFETY: argument types match histogram_kernel; keys below bins + 1.
        unsafe { b.launch(cfg(range.len())) }.map_err(|e| fail("histogram_kernel (mDBC)", e))?;
        super::scan_table(stream, k, table, scan)?;
        let mut b = stream.launch_builder(&k.scatter);
        b.arg(&count).arg(&*force).arg(&dummy).arg(&mut *table).arg(&mut *perm);
        // SAFETY: argument types match scatter_kernel; perm holds cap >= count entries.
        unsafe { b.launch(cfg(range.len())) }.map_err(|e| fail("scatter_kernel (mDBC)", e))?;
        // Static walls on a device alone: the ordered list as cell and place words into
        // `force` (free until the next force pass), then over the list itself, kept.
        if !(alone && self.mdbc_fixed) {
            return Ok(());
        }
        let CudaBackend {
            stream,
            k,
            pos,
            mdbc_list,
            perm,
            mdbc_listed,
            mdbc_fix_bad,
            force,
            cell_start,
            settled,
            words_host,
            ..
        } = self;
        let (Some(fix), Some(list), Some(bad)) = (k.mdbc_fix.as_ref(), mdbc_list.as_mut(), mdbc_fix_bad.as_mut())
        else {
            return Ok(());
        };
        stream.memset_zeros(bad).map_err(|e| fail("clearing the mDBC list's check", e))?;
        let mut b = stream.launch_builder(fix);
        b.arg(&count).arg(&*mdbc_listed).arg(&*list).arg(&*perm).arg(&wlo).arg(&whi).arg(&*pos);
        b.arg(&*cell_start).arg(&mut *force).arg(&mut *bad);
        // SAFETY: argument types match mdbc_fix_kernel; the list and its order as above;
        // `force` has room for count words; the cell table is the sort's, just made.
        unsafe { b.launch(cfg(range.len())) }.map_err(|e| fail("mdbc_fix_kernel", e))?;
        let n = range.len();
        stream
            .memcpy_dtod(&force.slice(0..n), &mut list.slice_mut(0..n))
            .map_err(|e| fail("keeping the mDBC list", e))?;
        let v = [bad.slice(..)];
        let w = super::read_words(stream, settled, words_host, &v, "mdbc_fix_kernel")?;
        if w[0] != 0 {
            // A cell index or a bin's wall particles past the word: list at every rebuild.
            self.mdbc_fixed = false;
            return self.list_mdbc();
        }
        self.mdbc_fixed_key = Some(key);
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
        let CudaBackend {
            stream,
            k,
            pos,
            vel,
            wall,
            info,
            mdbc,
            mdbc_list,
            perm,
            mdbc_listed,
            cell_start,
            win,
            dummy_out,
            mdbc_fixed_key,
            ..
        } = self;
        let (Some(kernel), Some(wall), Some(list)) = (k.mdbc.as_ref(), wall.as_ref(), mdbc_list.as_ref()) else {
            return Ok(());
        };
        let mdbc = mdbc.as_mut().unwrap_or(dummy_out);
        if range.is_empty() {
            return Ok(());
        }
        let (wlo, whi) = win.window;
        let mut b = stream.launch_builder(kernel);
        b.arg(list).arg(&*perm).arg(&*mdbc_listed).arg(&wlo).arg(&whi);
        b.arg(&*pos).arg(vel).arg(wall).arg(&*info).arg(&*cell_start).arg(mdbc);
        let fixed = i32::from(mdbc_fixed_key.is_some());
        b.arg(&fixed);
        // SAFETY: argument types match mdbc_kernel; the list holds `mdbc_listed` indices below
        // n, at most range.len() of them, and `perm` a permutation of its positions first
        // (list_mdbc, since the last rebuild, which nothing has overwritten: `perm` is
        // reused only during rebuilds), or (`fixed`) the list kept as each entry's cell and
        // place in its boundary bin, in order; `mdbc` is written only where it is allocated.
        unsafe { b.launch(cfg(range.len())) }.map_err(|e| fail("mdbc_kernel", e))?;
        Ok(())
    }
}
