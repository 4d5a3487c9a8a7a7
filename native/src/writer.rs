//! A snapshot chunk's rows written as one INSERT rows-event body: the compiled twin of
//! `bridge.snapshot.image.rows_body` with the column writers of `bridge.snapshot.image`.
//!
//! Built once per snapshot table from one spec per column (`bridge.snapshot.image.native_spec`)
//! and the column's Python writer. Columns without a spec (TIME, BIT, JSON, ...) are written by
//! calling their Python writer from here. A value this writer does not handle exactly like
//! Python (not the type the SELECT gives, out of range, text of an unexpected form) is handed
//! to the column's Python writer too, which writes the same bytes or raises the same error:
//! this writer only ever takes the plain path.

use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyFloat, PyInt, PySequence};

const INT: u8 = 1;
const YEAR: u8 = 2;
const FLOAT: u8 = 3;
const DOUBLE: u8 = 4;
const DECIMAL: u8 = 5;
const DATE: u8 = 6;
const DATETIME2: u8 = 7;
const TIMESTAMP2: u8 = 8;
const PREFIXED: u8 = 9;
const ENUM_SET: u8 = 10;
/// A column written by its Python writer.
const PYTHON: u8 = 0;

const DIG2BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

#[derive(Clone, Copy)]
struct Spec {
    kind: u8,
    a: i64,
    b: i64,
}

#[pyclass(frozen, module = "canal_bridge_native")]
pub struct ImageWriter {
    specs: Vec<Spec>,
    /// Per column, its Python writer `value -> bytes`.
    writers: Vec<Py<PyAny>>,
    /// Values of columns with a spec handed to their Python writer (tests require none for
    /// the values a SELECT gives).
    declined: AtomicU64,
}

#[pymethods]
impl ImageWriter {
    #[new]
    fn new(specs: Vec<Option<(u8, i64, i64)>>, writers: Vec<Py<PyAny>>) -> PyResult<Self> {
        if specs.len() != writers.len() {
            return Err(PyValueError::new_err("one spec and one writer per column"));
        }
        let mut checked = Vec::with_capacity(specs.len());
        for spec in specs {
            let Some((kind, a, b)) = spec else {
                checked.push(Spec {
                    kind: PYTHON,
                    a: 0,
                    b: 0,
                });
                continue;
            };
            let valid = match kind {
                INT => matches!(a, 1 | 2 | 3 | 4 | 8) && matches!(b, 0 | 1),
                YEAR | FLOAT | DOUBLE | DATE => true,
                DECIMAL => (1..=65).contains(&a) && (0..=a).contains(&b),
                DATETIME2 | TIMESTAMP2 => (0..=6).contains(&a),
                PREFIXED => (1..=4).contains(&a) && matches!(b, 0 | 1),
                ENUM_SET => (1..=8).contains(&a),
                _ => false,
            };
            if !valid {
                return Err(PyValueError::new_err(format!(
                    "bad column writer spec {:?}",
                    (kind, a, b)
                )));
            }
            checked.push(Spec { kind, a, b });
        }
        Ok(ImageWriter {
            specs: checked,
            writers,
            declined: AtomicU64::new(0),
        })
    }

    #[getter]
    fn declined(&self) -> u64 {
        self.declined.load(Ordering::Relaxed)
    }

    /// The body of an INSERT rows event holding `rows` (sequences of at least one value per
    /// column; values past the columns are ignored, as Python slices them off).
    fn body<'py>(
        &self,
        py: Python<'py>,
        rows: Vec<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let count = self.specs.len();
        let bitmap_size = count.div_ceil(8);
        let mut out: Vec<u8> = Vec::with_capacity(rows.len() * (bitmap_size + 16 * count));
        let mut present = vec![0u8; bitmap_size];
        for i in 0..count {
            present[i / 8] |= 1 << (i % 8);
        }
        out.extend_from_slice(&present);
        for row in rows {
            let row = row.cast_into::<PySequence>()?;
            let len = row.len()?;
            if len < count {
                return Err(PyValueError::new_err(format!(
                    "a row of {len} values for {count} columns"
                )));
            }
            let nulls_at = out.len();
            out.resize(nulls_at + bitmap_size, 0);
            for (i, spec) in self.specs.iter().enumerate() {
                let value = row.get_item(i)?;
                if value.is_none() {
                    out[nulls_at + i / 8] |= 1 << (i % 8);
                    continue;
                }
                if !write_value(*spec, &value, &mut out) {
                    if spec.kind != PYTHON {
                        self.declined.fetch_add(1, Ordering::Relaxed);
                    }
                    let written = self.writers[i].bind(py).call1((value,))?;
                    out.extend_from_slice(written.cast::<PyBytes>()?.as_bytes());
                }
            }
        }
        Ok(PyBytes::new(py, &out))
    }
}

/// Appends the value's image bytes and returns true, or returns false (nothing appended)
/// where the Python writer must decide.
fn write_value(spec: Spec, value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> bool {
    match spec.kind {
        INT => int_value(value).is_some_and(|v| write_int(v, spec.a as usize, spec.b == 1, out)),
        YEAR => int_value(value).is_some_and(|v| write_year(v, out)),
        FLOAT => float_value(value).is_some_and(|v| write_float(v, out)),
        DOUBLE => float_value(value).is_some_and(|v| {
            out.extend_from_slice(&v.to_le_bytes());
            true
        }),
        DECIMAL => bytes_value(value)
            .is_some_and(|t| write_decimal(t, spec.a as usize, spec.b as usize, out)),
        DATE => bytes_value(value).is_some_and(|t| write_date(t, out)),
        DATETIME2 => bytes_value(value).is_some_and(|t| write_datetime2(t, spec.a as u32, out)),
        TIMESTAMP2 => bytes_value(value).is_some_and(|t| write_timestamp2(t, spec.a as u32, out)),
        PREFIXED => bytes_value(value).is_some_and(|raw| {
            let raw = if spec.b == 1 {
                let end = raw.iter().rposition(|&c| c != 0).map_or(0, |p| p + 1);
                &raw[..end]
            } else {
                raw
            };
            write_prefixed(raw, spec.a as usize, out)
        }),
        ENUM_SET => int_value(value).is_some_and(|v| write_unsigned(v, spec.a as usize, out)),
        _ => false,
    }
}

fn int_value(value: &Bound<'_, PyAny>) -> Option<i128> {
    // Exact ints only (bool is an int subclass Python would write as 0/1 too, but the SELECT
    // never yields one): anything else goes to Python.
    if !value.is_exact_instance_of::<PyInt>() {
        return None;
    }
    value.extract::<i64>().ok().map(i128::from)
}

fn float_value(value: &Bound<'_, PyAny>) -> Option<f64> {
    if !value.is_exact_instance_of::<PyFloat>() {
        return None;
    }
    value.extract::<f64>().ok()
}

fn bytes_value<'a>(value: &'a Bound<'_, PyAny>) -> Option<&'a [u8]> {
    value.cast::<PyBytes>().ok().map(|b| b.as_bytes())
}

fn write_int(v: i128, size: usize, unsigned: bool, out: &mut Vec<u8>) -> bool {
    let bits = 8 * size as u32;
    let (low, high) = if unsigned {
        (0i128, 1i128 << bits)
    } else {
        (-(1i128 << (bits - 1)), 1i128 << (bits - 1))
    };
    if !(low..high).contains(&v) {
        return false;
    }
    out.extend_from_slice(&v.to_le_bytes()[..size]);
    true
}

fn write_year(v: i128, out: &mut Vec<u8>) -> bool {
    let byte = if v == 0 { 0 } else { v - 1900 };
    if !(0..=255).contains(&byte) {
        return false;
    }
    out.push(byte as u8);
    true
}

fn write_unsigned(v: i128, size: usize, out: &mut Vec<u8>) -> bool {
    if v < 0 || (size < 8 && v >= 1i128 << (8 * size)) {
        return false;
    }
    out.extend_from_slice(&v.to_le_bytes()[..size]);
    true
}

fn write_float(v: f64, out: &mut Vec<u8>) -> bool {
    let single = v as f32;
    if single.is_infinite() && v.is_finite() {
        return false; // struct.pack('<f') raises OverflowError: Python says so
    }
    out.extend_from_slice(&single.to_le_bytes());
    true
}

fn write_prefixed(raw: &[u8], size: usize, out: &mut Vec<u8>) -> bool {
    if size < 4 && raw.len() >= 1usize << (8 * size) || raw.len() > u32::MAX as usize {
        return false;
    }
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes()[..size]);
    out.extend_from_slice(raw);
    true
}

fn all_digits(text: &[u8]) -> bool {
    text.iter().all(u8::is_ascii_digit)
}

fn number(digits: &[u8]) -> u64 {
    digits
        .iter()
        .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'))
}

/// MySQL's `decimal2bin` of `[-+]digits[.digits]`, as `_decimal` in image.py.
fn write_decimal(text: &[u8], precision: usize, scale: usize, out: &mut Vec<u8>) -> bool {
    let (negative, rest) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (whole, fraction) = match rest.iter().position(|&c| c == b'.') {
        Some(dot) => (&rest[..dot], &rest[dot + 1..]),
        None => (rest, &rest[rest.len()..]),
    };
    if !all_digits(whole) || !all_digits(fraction) {
        return false;
    }
    let whole_digits = precision - scale;
    let first = whole.iter().position(|&c| c != b'0').unwrap_or(whole.len());
    let whole = &whole[first..];
    let significant = fraction
        .iter()
        .rposition(|&c| c != b'0')
        .map_or(0, |p| p + 1);
    if whole.len() > whole_digits || significant > scale {
        return false;
    }
    let mut digits = vec![b'0'; whole_digits + scale];
    digits[whole_digits - whole.len()..whole_digits].copy_from_slice(whole);
    let kept = fraction.len().min(scale);
    digits[whole_digits..whole_digits + kept].copy_from_slice(&fraction[..kept]);
    let mut groups: Vec<(usize, usize)> = Vec::new();
    if !whole_digits.is_multiple_of(9) {
        groups.push((DIG2BYTES[whole_digits % 9], whole_digits % 9));
    }
    groups.extend(std::iter::repeat_n((4, 9), whole_digits / 9 + scale / 9));
    if !scale.is_multiple_of(9) {
        groups.push((DIG2BYTES[scale % 9], scale % 9));
    }
    let start = out.len();
    let mut at = 0;
    for (nbytes, count) in groups {
        let value = number(&digits[at..at + count]);
        out.extend_from_slice(&value.to_be_bytes()[8 - nbytes..]);
        at += count;
    }
    let zero = digits.iter().all(|&d| d == b'0');
    if negative && !zero {
        for byte in &mut out[start..] {
            *byte = !*byte;
        }
        out[start] ^= 0x80; // every bit but the sign
    } else {
        out[start] |= 0x80;
    }
    true
}

/// `digits` (1..=6 of them) as microseconds.
fn micros(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 6 || !all_digits(digits) {
        return None;
    }
    Some(number(digits) * 10u64.pow(6 - digits.len() as u32))
}

/// `[.digits]` after the whole seconds: microseconds (0 without a fraction).
fn fraction_of(rest: &[u8]) -> Option<u64> {
    match rest {
        [] => Some(0),
        [b'.', digits @ ..] => micros(digits),
        _ => None,
    }
}

fn write_fraction(micros: u64, fsp: u32, out: &mut Vec<u8>) {
    match fsp {
        0 => {}
        1 | 2 => out.push((micros / 10000) as u8),
        3 | 4 => out.extend_from_slice(&((micros / 100) as u16).to_be_bytes()),
        _ => out.extend_from_slice(&(micros as u32).to_be_bytes()[1..]),
    }
}

/// Fixed-width digits at `text[at..at + width]`.
fn field(text: &[u8], at: usize, width: usize) -> Option<u64> {
    let digits = text.get(at..at + width)?;
    all_digits(digits).then(|| number(digits))
}

fn write_date(text: &[u8], out: &mut Vec<u8>) -> bool {
    if text.len() != 10 || text[4] != b'-' || text[7] != b'-' {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (field(text, 0, 4), field(text, 5, 2), field(text, 8, 2))
    else {
        return false;
    };
    out.extend_from_slice(&((y << 9 | m << 5 | d) as u32).to_le_bytes()[..3]);
    true
}

fn write_datetime2(text: &[u8], fsp: u32, out: &mut Vec<u8>) -> bool {
    if text.len() < 19
        || text[4] != b'-'
        || text[7] != b'-'
        || text[10] != b' '
        || text[13] != b':'
        || text[16] != b':'
    {
        return false;
    }
    let parts =
        [(0, 4), (5, 2), (8, 2), (11, 2), (14, 2), (17, 2)].map(|(at, w)| field(text, at, w));
    let [Some(y), Some(mo), Some(d), Some(h), Some(mi), Some(s)] = parts else {
        return false;
    };
    let Some(micros) = fraction_of(&text[19..]) else {
        return false;
    };
    let packed = ((y * 13 + mo) << 22 | d << 17 | h << 12 | mi << 6 | s) + 0x80_0000_0000;
    out.extend_from_slice(&packed.to_be_bytes()[3..]);
    write_fraction(micros, fsp, out);
    true
}

fn write_timestamp2(text: &[u8], fsp: u32, out: &mut Vec<u8>) -> bool {
    let dot = text.iter().position(|&c| c == b'.').unwrap_or(text.len());
    let seconds = &text[..dot];
    if seconds.is_empty() || seconds.len() > 10 || !all_digits(seconds) {
        return false;
    }
    let Ok(seconds) = u32::try_from(number(seconds)) else {
        return false;
    };
    let Some(micros) = fraction_of(&text[dot..]) else {
        return false;
    };
    out.extend_from_slice(&seconds.to_be_bytes());
    write_fraction(micros, fsp, out);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(text: &str, precision: usize, scale: usize) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        write_decimal(text.as_bytes(), precision, scale, &mut out).then_some(out)
    }

    #[test]
    fn decimals_as_mysql_packs_them() {
        // MySQL's own example (decimal2bin): 1234567890.1234 as DECIMAL(14,4).
        assert_eq!(
            decimal("1234567890.1234", 14, 4),
            Some(vec![0x81, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2])
        );
        assert_eq!(
            decimal("-1234567890.1234", 14, 4),
            Some(vec![0x7E, 0xF2, 0x04, 0xC7, 0x2D, 0xFB, 0x2D])
        );
        assert_eq!(decimal("-0.00", 5, 2), decimal("0", 5, 2));
        assert_eq!(decimal("1000", 5, 2), None); // too many whole digits: Python raises
        assert_eq!(decimal("1.001", 5, 2), None);
        assert_eq!(decimal("1e5", 5, 2), None);
    }

    #[test]
    fn temporal_texts_of_an_unexpected_form_go_to_python() {
        let mut out = Vec::new();
        assert!(!write_datetime2(b"2024-01-02T03:04:05", 0, &mut out));
        assert!(!write_datetime2(
            b"2024-01-02 03:04:05.1234567",
            6,
            &mut out
        ));
        assert!(!write_date(b"2024-1-02", &mut out));
        assert!(!write_timestamp2(b"4294967296", 0, &mut out));
        assert!(out.is_empty());
        assert!(write_timestamp2(b"4294967295.5", 1, &mut out));
        assert_eq!(out, vec![0xFF, 0xFF, 0xFF, 0xFF, 50]);
    }
}
