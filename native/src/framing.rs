//! Binlog events cut out of the dump connection's bytes: the compiled twin of
//! `bridge.parse.framing.EventReader`'s packet loop, for the common case. A dump sends one
//! event per packet; framing each in Python (length, marker, slice: three calls) cost about
//! as much as converting a GTID event, so the whole buffer is cut here in one call. What is
//! not a plain event packet (a 16 MiB packet with continuations, an error or EOF packet, an
//! incomplete packet) is left where it starts, for the Python loop to read as before.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

/// A payload this long is continued in the next packet (`framing.MAX_PACKET`).
const MAX_PAYLOAD: usize = 0xFF_FFFF;
/// The first byte of a packet carrying a binlog event.
const EVENT_MARKER: u8 = 0;

/// Appends to `events` the event (the payload after its marker byte) of each whole packet of
/// `buffer` from `at` on that carries one event, and returns where the first packet it did not
/// take starts (`len(buffer)` when it took them all).
#[pyfunction]
pub fn binlog_events(buffer: &[u8], at: usize, events: &Bound<'_, PyList>) -> PyResult<usize> {
    let py = events.py();
    let mut at = at;
    while let Some(header) = buffer.get(at..at + 4) {
        let length =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        if length >= MAX_PAYLOAD {
            break;
        }
        let Some(payload) = buffer.get(at + 4..at + 4 + length) else {
            break;
        };
        if payload.first() != Some(&EVENT_MARKER) {
            break;
        }
        events.append(PyBytes::new(py, &payload[1..]))?;
        at += 4 + length;
    }
    Ok(at)
}
