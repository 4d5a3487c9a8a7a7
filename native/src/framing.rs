//! Binlog events cut out of the dump connection's bytes: the compiled twin of
//! `bridge.parse.framing.EventReader`'s packet loop, for the common case. A dump sends one
//! event per packet; framing each in Python (length, marker, slice: three calls) cost about
//! as much as converting a GTID event, so the whole buffer is cut here in one call. What is
//! not an event packet (an error or EOF packet) or not whole yet is left where it starts,
//! for the Python loop to read as before.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::result::payload;

/// The first byte of a packet carrying a binlog event.
const EVENT_MARKER: u8 = 0;

/// Appends to `events` the event (the payload after its marker byte, continuation packets
/// joined) of each whole packet of `buffer` from `at` on that carries one, and returns where
/// the first packet it did not take starts (`len(buffer)` when it took them all).
#[pyfunction]
pub fn binlog_events(buffer: &[u8], at: usize, events: &Bound<'_, PyList>) -> PyResult<usize> {
    let py = events.py();
    let mut at = at;
    while let Some((body, next)) = payload(buffer, at) {
        if body.first() != Some(&EVENT_MARKER) {
            break;
        }
        events.append(PyBytes::new(py, &body[1..]))?;
        at = next;
    }
    Ok(at)
}
