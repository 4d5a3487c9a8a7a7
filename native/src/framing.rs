//! Binlog events cut out of the dump connection's bytes: the compiled twin of
//! `bridge.parse.binlog.framing.EventReader`'s packet loop, for the common case. A dump sends one
//! event per packet; framing each in Python (length, marker, slice: three calls) cost about
//! as much as converting a GTID event, so the whole buffer is cut here in one call. What is
//! not an event packet (an error or EOF packet) or not whole yet is left where it starts,
//! for the Python loop to read as before.

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::image::le_uint;
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

/// A binlog event header's length, and the checksum's after the body (also read by
/// `convert.rs`); where the header's log_pos sits; the ROTATE event's type code.
pub(crate) const HEADER_SIZE: usize = 19;
pub(crate) const CHECKSUM_SIZE: usize = 4;
const LOG_POS_AT: usize = 13;
const ROTATE_EVENT: u8 = 4;

/// `bridge.parse.binlog.framing.read_end`: where a read of `events` leaves the binlog, given where
/// the read before left it (`journal`, `position`): the file of the last ROTATE and the last
/// non-zero log_pos after it. An event shorter than its header raises ValueError (a broken
/// stream); a ROTATE's file name is decoded by Python's `bytes.decode`, so an invalid one
/// raises as there.
#[pyfunction]
pub fn read_end<'py>(
    events: &Bound<'py, PyList>,
    checksum: bool,
    journal: Bound<'py, PyAny>,
    position: u64,
) -> PyResult<(Bound<'py, PyAny>, u64)> {
    let py = events.py();
    let (mut journal, mut position) = (journal, position);
    for item in events.iter() {
        let data = item.cast::<PyBytes>()?.as_bytes();
        if data.len() < HEADER_SIZE {
            return Err(PyValueError::new_err(format!(
                "a binlog event shorter than its {HEADER_SIZE}-byte header"
            )));
        }
        if data[4] == ROTATE_EVENT {
            // As `bridge.parse.binlog.events.rotation`, slices and all (a short body reads short).
            let body_end = data.len() - if checksum { CHECKSUM_SIZE } else { 0 };
            let at = (HEADER_SIZE + 8).min(data.len());
            position = le_uint(&data[HEADER_SIZE..at]);
            let name = &data[at..body_end.max(at)];
            journal = PyBytes::new(py, name).call_method0(intern!(py, "decode"))?;
        } else {
            let log_pos = le_uint(&data[LOG_POS_AT..LOG_POS_AT + 4]);
            if log_pos != 0 {
                position = log_pos;
            }
        }
    }
    Ok((journal, position))
}
