//! The rows of a text-protocol result set read straight from the connection's bytes: the
//! compiled twin of PyMySQL's row loop (`MySQLResult._read_rowdata_packet`, one Python call
//! per packet and per column), for the snapshot's chunk SELECTs
//! (`bridge.snapshot.result.fetch_rows`).
//!
//! Each column is made as PyMySQL makes it from the converter its description chose: bytes
//! where it converts nothing (binary results), an int where its converter is `int` (parsed
//! here when the text is a plain decimal integer), else the column's Python converter is
//! called on the bytes. Only whole packets are read; what is left is the caller's to prepend
//! to the next bytes from the socket.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList, PyTuple};

/// A column kept as bytes (no converter, no encoding: a binary result).
const RAW: u8 = 0;
/// A column whose converter is `int`.
const INT: u8 = 1;
// Any other kind: the column's converter (given) is called on its bytes.

/// The packets read so far came to the end of the result set (its EOF packet, consumed).
const END: u8 = 1;
/// An error packet starts at the offset returned: the caller raises it.
const ERROR: u8 = 2;
/// More bytes are needed for the next packet.
const MORE: u8 = 0;

const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// One logical packet's payload (joined over 16 MiB continuation packets) at ``at``, and
/// where the next packet starts; None while it is incomplete. Also the binlog framing's
/// (`framing::binlog_events`).
pub(crate) fn payload(buffer: &[u8], at: usize) -> Option<(std::borrow::Cow<'_, [u8]>, usize)> {
    let mut at = at;
    let mut joined: Option<Vec<u8>> = None;
    loop {
        let header = buffer.get(at..at + 4)?;
        let length =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        let body = buffer.get(at + 4..at + 4 + length)?;
        at += 4 + length;
        if length < MAX_PAYLOAD {
            return Some(match joined {
                None => (std::borrow::Cow::Borrowed(body), at),
                Some(mut all) => {
                    all.extend_from_slice(body);
                    (std::borrow::Cow::Owned(all), at)
                }
            });
        }
        joined.get_or_insert_with(Vec::new).extend_from_slice(body);
    }
}

/// A length-encoded string at ``at`` of a row packet: Some(None) for NULL, None past the end.
fn column(row: &[u8], at: &mut usize) -> Option<Option<(usize, usize)>> {
    let first = *row.get(*at)?;
    let (length, width) = match first {
        0xFB => {
            *at += 1;
            return Some(None);
        }
        0xFC => (read_le(row.get(*at + 1..*at + 3)?), 3),
        0xFD => (read_le(row.get(*at + 1..*at + 4)?), 4),
        0xFE => (read_le(row.get(*at + 1..*at + 9)?), 9),
        small => (usize::from(small), 1),
    };
    let start = *at + width;
    let end = start.checked_add(length)?;
    if end > row.len() {
        return None;
    }
    *at = end;
    Some(Some((start, end)))
}

fn read_le(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rev()
        .fold(0usize, |value, byte| value << 8 | usize::from(*byte))
}

/// A plain decimal integer (an optional minus, then digits) as a Python int; None otherwise.
fn integer<'py>(py: Python<'py>, text: &[u8]) -> Option<Bound<'py, PyAny>> {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let text = std::str::from_utf8(text).ok()?;
    if let Ok(value) = text.parse::<i64>() {
        return Some(PyInt::new(py, value).into_any());
    }
    text.parse::<u64>()
        .ok()
        .map(|value| PyInt::new(py, value).into_any())
}

fn row_tuple<'py>(
    py: Python<'py>,
    row: &[u8],
    kinds: &[u8],
    converters: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut values: Vec<Bound<'py, PyAny>> = Vec::with_capacity(kinds.len());
    let mut at = 0;
    for (index, kind) in kinds.iter().enumerate() {
        // A row shorter than the description ends there, as PyMySQL's does.
        let Some(value) = column(row, &mut at) else {
            break;
        };
        let Some((start, end)) = value else {
            values.push(py.None().into_bound(py));
            continue;
        };
        let data = &row[start..end];
        let convert = || converters.get_item(index)?.call1((PyBytes::new(py, data),));
        values.push(match *kind {
            RAW => PyBytes::new(py, data).into_any(),
            INT => match integer(py, data) {
                Some(value) => value,
                None => convert()?,
            },
            _ => convert()?,
        });
    }
    PyTuple::new(py, values)
}

/// Reads the row packets of ``buffer`` (from its start, the next packet of a result set
/// whose descriptions were read), appending each row to ``rows`` as a tuple. ``kinds``: per
/// column ``RAW``, ``INT`` or ``CONVERT``; ``converters``: per column a callable taking the
/// column's bytes (used for ``CONVERT``, and for an ``INT`` that is no plain integer).
/// Returns ``(offset, state)``: ``state`` 1 when the EOF packet was read (``offset`` past
/// it), 2 when an error packet starts at ``offset``, 0 when the packet at ``offset`` is not
/// complete yet.
#[pyfunction]
pub fn text_rows<'py>(
    py: Python<'py>,
    buffer: &[u8],
    kinds: &[u8],
    converters: &Bound<'py, PyTuple>,
    rows: &Bound<'py, PyList>,
) -> PyResult<(usize, u8)> {
    let mut at = 0;
    loop {
        let Some((body, next)) = payload(buffer, at) else {
            return Ok((at, MORE));
        };
        match body.first() {
            Some(0xFE) if body.len() < 9 => return Ok((next, END)),
            Some(0xFF) => return Ok((at, ERROR)),
            _ => {}
        }
        rows.append(row_tuple(py, &body, kinds, converters)?)?;
        at = next;
    }
}
