//! What devices send each other: the one interface a smart worker talks through, whether its
//! neighbours are threads of this process (channels: plain moves of host buffers) or, with
//! MPI, on other ranks.
//!
//! Point-to-point traffic goes to the left and right neighbours only: particles at a
//! rebuild, force values of the edges at each force pass. Collectives (the dt and rebuild
//! reductions, the load balancer's times) involve every device and return the same values
//! on all of them, reduced in device order, so every device takes the same decisions.

use std::sync::mpsc::{channel, Receiver, Sender};
use surge_core::backend::DeviceBlock;
use surge_core::buffers::ParticleState;
use surge_core::decomp::Side;

/// A message to a neighbour.
#[derive(Debug)]
pub enum Packet {
    /// Particles at a rebuild: the neighbour's copies and the particles it now owns.
    Particles(ParticleState),
    /// Force values of an edge ([`surge_core::backend::Backend::edge_forces`]).
    Forces(Vec<[f32; 4]>),
    /// Particles or force values left in the sender's device memory, for the receiver's
    /// backend to copy device to device ([`surge_core::backend::Backend::rebuild_begin_peer`],
    /// [`surge_core::backend::Backend::edge_forces_peer`]). Only between devices of one
    /// process ([`Exchange::same_process`]).
    Device(DeviceBlock),
    /// The sender failed in this stage; the failure is reported at the next reduction.
    Failed,
}

impl Packet {
    /// Short name for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Packet::Particles(_) => "particles",
            Packet::Forces(_) => "forces",
            Packet::Device(_) => "device block",
            Packet::Failed => "failure notice",
        }
    }
}

/// A device's links to the others.
pub trait Exchange: Send {
    /// This device's global number.
    fn device(&self) -> usize;
    /// Number of devices.
    fn devices(&self) -> usize;
    /// True when the neighbours are devices of this process, so [`Packet::Device`] may be
    /// sent (their memory is reachable from here); false by default.
    fn same_process(&self) -> bool {
        false
    }
    /// Send to the neighbour on `side` (never blocks on the receiver).
    fn send(&mut self, side: Side, p: Packet) -> Result<(), String>;
    /// Receive the next packet from the neighbour on `side` (blocks).
    fn recv(&mut self, side: Side) -> Result<Packet, String>;
    /// Element-wise maximum of `v` over every device, in place.
    fn max(&mut self, v: &mut [f64]) -> Result<(), String>;
    /// Every device's `v`, in device order.
    fn gather(&mut self, v: f64) -> Result<Vec<f64>, String>;
}

/// A device alone: nothing to exchange.
pub struct Solo;

impl Exchange for Solo {
    fn device(&self) -> usize {
        0
    }
    fn devices(&self) -> usize {
        1
    }
    fn send(&mut self, side: Side, _: Packet) -> Result<(), String> {
        Err(format!("a device alone has no {side:?} neighbour"))
    }
    fn recv(&mut self, side: Side) -> Result<Packet, String> {
        Err(format!("a device alone has no {side:?} neighbour"))
    }
    fn max(&mut self, _: &mut [f64]) -> Result<(), String> {
        Ok(())
    }
    fn gather(&mut self, v: f64) -> Result<Vec<f64>, String> {
        Ok(vec![v])
    }
}

/// Devices of one process: channels between threads. Sends move host buffers (no copy).
pub struct Local {
    me: usize,
    n: usize,
    to: [Option<Sender<Packet>>; 2],
    from: [Option<Receiver<Packet>>; 2],
    /// Collective values to every other device, and from each, indexed by device.
    coll_to: Vec<Option<Sender<Vec<f64>>>>,
    coll_from: Vec<Option<Receiver<Vec<f64>>>>,
}

/// Links for `n` devices of one process, one per device in device order.
pub fn local(n: usize) -> Vec<Local> {
    let mut links: Vec<Local> = (0..n)
        .map(|me| Local {
            me,
            n,
            to: [None, None],
            from: [None, None],
            coll_to: (0..n).map(|_| None).collect(),
            coll_from: (0..n).map(|_| None).collect(),
        })
        .collect();
    for d in 1..n {
        // d - 1 -> d (d's left) and d -> d - 1 (d - 1's right).
        let (tx, rx) = channel();
        links[d - 1].to[Side::Right as usize] = Some(tx);
        links[d].from[Side::Left as usize] = Some(rx);
        let (tx, rx) = channel();
        links[d].to[Side::Left as usize] = Some(tx);
        links[d - 1].from[Side::Right as usize] = Some(rx);
    }
    for a in 0..n {
        for b in 0..n {
            if a != b {
                let (tx, rx) = channel();
                links[a].coll_to[b] = Some(tx);
                links[b].coll_from[a] = Some(rx);
            }
        }
    }
    links
}

impl Local {
    fn gone(&self, d: usize) -> String {
        format!("device {d} stopped (its worker ended)")
    }
    fn neighbour(&self, side: Side) -> usize {
        match side {
            Side::Left => self.me.wrapping_sub(1),
            Side::Right => self.me + 1,
        }
    }
    /// Everyone's vector, in device order.
    fn all(&mut self, v: Vec<f64>) -> Result<Vec<Vec<f64>>, String> {
        for d in 0..self.n {
            if let Some(tx) = &self.coll_to[d] {
                tx.send(v.clone()).map_err(|_| self.gone(d))?;
            }
        }
        let mut out = Vec::with_capacity(self.n);
        for d in 0..self.n {
            match &self.coll_from[d] {
                None => out.push(v.clone()),
                Some(rx) => out.push(rx.recv().map_err(|_| self.gone(d))?),
            }
        }
        Ok(out)
    }
}

impl Exchange for Local {
    fn device(&self) -> usize {
        self.me
    }
    fn devices(&self) -> usize {
        self.n
    }
    fn same_process(&self) -> bool {
        true
    }
    fn send(&mut self, side: Side, p: Packet) -> Result<(), String> {
        let d = self.neighbour(side);
        match &self.to[side as usize] {
            Some(tx) => tx.send(p).map_err(|_| self.gone(d)),
            None => Err(format!("device {} has no {side:?} neighbour", self.me)),
        }
    }
    fn recv(&mut self, side: Side) -> Result<Packet, String> {
        let d = self.neighbour(side);
        match &self.from[side as usize] {
            Some(rx) => rx.recv().map_err(|_| self.gone(d)),
            None => Err(format!("device {} has no {side:?} neighbour", self.me)),
        }
    }
    fn max(&mut self, v: &mut [f64]) -> Result<(), String> {
        let all = self.all(v.to_vec())?;
        for (k, x) in v.iter_mut().enumerate() {
            *x = all.iter().map(|w| w[k]).fold(f64::NEG_INFINITY, f64::max);
        }
        Ok(())
    }
    fn gather(&mut self, v: f64) -> Result<Vec<f64>, String> {
        Ok(self.all(vec![v])?.into_iter().map(|w| w[0]).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_links_pass_packets_and_reduce_in_device_order() {
        let links = local(3);
        let handles: Vec<_> = links
            .into_iter()
            .map(|mut l| {
                std::thread::spawn(move || {
                    let me = l.device();
                    if me > 0 {
                        l.send(Side::Left, Packet::Forces(vec![[me as f32; 4]])).unwrap();
                    }
                    let got = if me < 2 {
                        match l.recv(Side::Right).unwrap() {
                            Packet::Forces(v) => v[0][0],
                            p => panic!("{}", p.kind()),
                        }
                    } else {
                        -1.0
                    };
                    let mut v = [me as f64, -(me as f64)];
                    l.max(&mut v).unwrap();
                    (got, v, l.gather(me as f64 * 10.0).unwrap())
                })
            })
            .collect();
        let r: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(r[0].0, 1.0);
        assert_eq!(r[1].0, 2.0);
        for (_, v, g) in &r {
            assert_eq!(*v, [2.0, 0.0]);
            assert_eq!(*g, vec![0.0, 10.0, 20.0]);
        }
    }

    #[test]
    fn a_stopped_device_is_an_error_not_a_hang() {
        let mut links = local(2);
        let l1 = links.pop().unwrap();
        drop(l1);
        let mut l0 = links.pop().unwrap();
        assert!(l0.recv(Side::Right).unwrap_err().contains("device 1 stopped"));
        assert!(l0.max(&mut [1.0]).unwrap_err().contains("device 1 stopped"));
    }
}
