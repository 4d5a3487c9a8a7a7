//! One row image of a rows event, decoded to canal's texts: the compiled twin of the reader
//! that `bridge.parse.rows._image_reader` generates from `bridge.parse.values`' decoders.
//!
//! Built once per table definition and present-columns bitmap from one spec per column
//! (`bridge.parse.compiled.column_spec`); columns without one (FLOAT, TIMESTAMP, ENUM, ...)
//! are decoded by calling their Python decoder from here. Anything this reader does not render exactly like
//! Python (a value past the end of the event, invalid UTF-8, a corrupt DECIMAL group, a
//! negative DATETIME2) makes it call the Python reader for that image instead, which gives
//! the same result or raises the same error.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyString, PyTuple};

const INT: u8 = 1;
const DECIMAL: u8 = 2;
const DATETIME2: u8 = 3;
const DATE: u8 = 4;
const TIME2: u8 = 5;
const YEAR: u8 = 6;
const TEXT: u8 = 7;
/// A column the compiled reader does not render: its Python decoder is called.
const PYTHON: u8 = 0;

const UTF8: i64 = 0;

/// `(kind, a, b, sql_type, d)` as Python builds it (`bridge/parse/compiled.py`), None for a
/// column decoded by Python.
type SpecTuple = Option<(u8, i64, i64, i64, i64)>;

/// One column's spec, checked.
#[derive(Clone, Copy)]
struct Spec {
    kind: u8,
    a: i64,
    b: i64,
    sql_type: i64,
    d: i64,
}

/// Why an image goes back to Python: it decides what the value is, or which error it is.
struct Decline;

type Step<T> = Result<T, Decline>;

fn take(data: &[u8], pos: usize, size: usize) -> Step<&[u8]> {
    data.get(pos..pos + size).ok_or(Decline)
}

fn be_uint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |acc, &b| acc << 8 | u64::from(b))
}

fn le_uint(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0, |acc, &b| acc << 8 | u64::from(b))
}

fn two(out: &mut String, value: i64) {
    let _ = write!(out, "{value:02}");
}

/// A signed little-endian integer of `size` bytes; UNSIGNED values read negative get 2**bits
/// and the wider type, as canal does.
fn integer(data: &[u8], pos: usize, spec: &Spec, out: &mut String) -> Step<(usize, i64)> {
    let size = spec.a as usize;
    let raw = le_uint(take(data, pos, size)?);
    let bits = 8 * size as u32;
    let signed = if bits == 64 {
        raw as i64
    } else {
        ((raw << (64 - bits)) as i64) >> (64 - bits)
    };
    let mut sql_type = spec.sql_type;
    if spec.b != 0 && signed < 0 {
        let _ = write!(out, "{raw}");
        sql_type = spec.d;
    } else {
        let _ = write!(out, "{signed}");
    }
    Ok((pos + size, sql_type))
}

const DIG2BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

/// MySQL's bin2decimal rendered as `BigDecimal.toPlainString()` (plus canal's quirk of
/// dropping a zero trailing partial group, when asked), from the digit groups directly.
fn decimal(data: &[u8], pos: usize, spec: &Spec, out: &mut String) -> Step<usize> {
    let (precision, scale) = (spec.a as usize, spec.b as usize);
    let intg = precision - scale;
    let mut groups: Vec<(usize, usize)> = Vec::with_capacity(precision / 9 + 2);
    if intg % 9 != 0 {
        groups.push((DIG2BYTES[intg % 9], intg % 9));
    }
    groups.extend(std::iter::repeat_n((4, 9), intg / 9 + scale / 9));
    if scale % 9 != 0 {
        groups.push((DIG2BYTES[scale % 9], scale % 9));
    }
    let size: usize = groups.iter().map(|g| g.0).sum();
    let mut raw = take(data, pos, size)?.to_vec();
    let negative = raw[0] & 0x80 == 0;
    if negative {
        raw.iter_mut().for_each(|b| *b = !*b);
    }
    raw[0] &= 0x7f;
    let mut digits = String::with_capacity(precision + 1);
    let mut at = 0;
    let mut last_group = 0;
    for &(nbytes, ndigits) in &groups {
        let value = be_uint(&raw[at..at + nbytes]);
        if value >= 10u64.pow(ndigits as u32) {
            return Err(Decline);
        }
        let _ = write!(digits, "{value:0ndigits$}");
        at += nbytes;
        last_group = value;
    }
    let tail = scale % 9;
    let mut kept = scale;
    if spec.d != 0 && tail > 0 && last_group == 0 {
        digits.truncate(digits.len() - tail);
        kept = scale - tail;
        if kept == 0 {
            digits.push('0');
            kept = 1;
        }
    }
    let (whole, fraction) = digits.split_at(digits.len() - kept);
    let whole = whole.trim_start_matches('0');
    if negative && digits.bytes().any(|b| b != b'0') {
        out.push('-');
    }
    out.push_str(if whole.is_empty() { "0" } else { whole });
    if kept > 0 {
        out.push('.');
        out.push_str(fraction);
    }
    Ok(pos + size)
}

fn fraction_digits(out: &mut String, text_len: usize, micros: i64, fsp: usize) {
    let _ = write!(out, ".{micros:06}");
    out.truncate(text_len + 1 + fsp);
}

fn datetime2(data: &[u8], pos: usize, spec: &Spec, out: &mut String) -> Step<usize> {
    let fsp = spec.a as usize;
    let frac_size = fsp.div_ceil(2);
    let bytes = take(data, pos, 5 + frac_size)?;
    let intpart = be_uint(&bytes[..5]) as i64 - 0x80_0000_0000;
    // Python lays these out differently (negative numbers, a fifth year digit): its call.
    if intpart < 0 || (intpart >> 22) / 13 > 9999 {
        return Err(Decline);
    }
    if intpart == 0 {
        out.push_str("0000-00-00 00:00:00");
    } else {
        let ymd = intpart >> 17;
        let ym = ymd >> 5;
        let hms = intpart & 0x1ffff;
        let _ = write!(out, "{:04}-", ym / 13);
        two(out, ym % 13);
        out.push('-');
        two(out, ymd & 31);
        out.push(' ');
        two(out, hms >> 12);
        out.push(':');
        two(out, hms >> 6 & 63);
        out.push(':');
        two(out, hms & 63);
    }
    if fsp > 0 {
        let frac = &bytes[5..];
        // Signed big-endian: the first byte carries the sign.
        let signed = (be_uint(frac) as i64) << (64 - 8 * frac.len()) >> (64 - 8 * frac.len());
        let micros = signed * [0, 10_000, 100, 1][frac.len()];
        if micros < 0 {
            return Err(Decline);
        }
        let text_len = out.len();
        fraction_digits(out, text_len, micros, if fsp == 6 { 6 } else { fsp });
    }
    Ok(pos + 5 + frac_size)
}

fn date(data: &[u8], pos: usize, out: &mut String) -> Step<usize> {
    let value = le_uint(take(data, pos, 3)?) as i64;
    if value == 0 {
        out.push_str("0000-00-00");
    } else {
        let _ = write!(out, "{:04}-", value >> 9);
        two(out, value >> 5 & 15);
        out.push('-');
        two(out, value & 31);
    }
    Ok(pos + 3)
}

/// canal's TIME2 algorithm, including the reversed fraction of negative values.
fn time2(data: &[u8], pos: usize, spec: &Spec, out: &mut String) -> Step<usize> {
    let fsp = spec.a as usize;
    let size = 3 + fsp.div_ceil(2);
    let bytes = take(data, pos, size)?;
    let (intpart, ltime, frac) = if fsp >= 5 {
        let intpart = be_uint(&bytes[..6]) as i64 - 0x8000_0000_0000;
        (intpart, intpart, intpart % (1 << 24)) // Rust's % truncates like Java's
    } else {
        let mut intpart = be_uint(&bytes[..3]) as i64 - 0x80_0000;
        let mut frac = 0;
        if fsp > 0 {
            let width = if fsp <= 2 { 1 } else { 2 };
            frac = be_uint(&bytes[3..3 + width]) as i64;
            if intpart < 0 && frac > 0 {
                intpart += 1;
                frac -= 1 << (8 * width);
            }
            frac *= if fsp <= 2 { 10_000 } else { 100 };
        }
        (intpart, intpart << 24, frac)
    };
    if intpart == 0 {
        out.push_str(if frac < 0 { "-00:00:00" } else { "00:00:00" });
    } else {
        let hms = ltime.abs() >> 24;
        if ltime < 0 {
            out.push('-');
        }
        two(out, hms >> 12 & 1023);
        out.push(':');
        two(out, hms >> 6 & 63);
        out.push(':');
        two(out, hms & 63);
    }
    if fsp > 0 {
        let text_len = out.len();
        fraction_digits(out, text_len, frac.abs(), fsp);
    }
    Ok(pos + size)
}

fn year(data: &[u8], pos: usize, out: &mut String) -> Step<usize> {
    let value = *data.get(pos).ok_or(Decline)?;
    if value == 0 {
        out.push_str("0000");
    } else {
        let _ = write!(out, "{}", u32::from(value) + 1900);
    }
    Ok(pos + 1)
}

/// A length-prefixed value: UTF-8 text, or binary bytes as ISO-8859-1 (canal's BLOB text).
fn text<'py>(
    py: Python<'py>,
    data: &[u8],
    pos: usize,
    spec: &Spec,
) -> Step<(Bound<'py, PyString>, usize)> {
    let prefix = spec.a as usize;
    let len = le_uint(take(data, pos, prefix)?) as usize;
    let start = pos + prefix;
    let raw = take(data, start, len)?;
    let value = if spec.b == UTF8 {
        PyString::new(py, std::str::from_utf8(raw).map_err(|_| Decline)?)
    } else {
        let latin1: String = raw.iter().map(|&b| char::from(b)).collect();
        PyString::new(py, &latin1)
    };
    Ok((value, start + len))
}

#[pyclass(frozen, module = "canal_bridge_native")]
pub struct ImageReader {
    specs: Vec<Spec>,
    null_types: Vec<Py<PyAny>>,
    /// Per column, its Python decoder `(data, pos) -> (text, sql_type, pos)`.
    decoders: Vec<Py<PyAny>>,
    /// The Python reader of the same plan: used whenever this one declines an image.
    fallback: Py<PyAny>,
    /// Images handed to `fallback` (tests require none for well-formed rows).
    declined: AtomicU64,
}

#[pymethods]
impl ImageReader {
    #[new]
    fn new(
        py: Python<'_>,
        specs: Vec<SpecTuple>,
        null_types: Vec<i64>,
        decoders: Vec<Py<PyAny>>,
        fallback: Py<PyAny>,
    ) -> PyResult<Self> {
        if specs.len() != null_types.len() || specs.len() != decoders.len() {
            return Err(PyValueError::new_err(
                "one spec, NULL sql type and decoder per column",
            ));
        }
        let mut checked = Vec::with_capacity(specs.len());
        for spec in specs {
            let Some((kind, a, b, sql_type, d)) = spec else {
                checked.push(Spec {
                    kind: PYTHON,
                    a: 0,
                    b: 0,
                    sql_type: 0,
                    d: 0,
                });
                continue;
            };
            let valid = match kind {
                INT => matches!(a, 1 | 2 | 3 | 4 | 8),
                DECIMAL => a > 0 && (0..=a).contains(&b) && a <= 65,
                DATETIME2 | TIME2 => (0..=6).contains(&a),
                DATE | YEAR => true,
                TEXT => (1..=4).contains(&a),
                _ => false,
            };
            if !valid {
                return Err(PyValueError::new_err(format!(
                    "bad column spec {:?}",
                    (kind, a, b, sql_type, d)
                )));
            }
            checked.push(Spec {
                kind,
                a,
                b,
                sql_type,
                d,
            });
        }
        let null_types = null_types
            .into_iter()
            .map(|t| PyInt::new(py, t).into_any().unbind())
            .collect();
        Ok(Self {
            specs: checked,
            null_types,
            decoders,
            fallback,
            declined: AtomicU64::new(0),
        })
    }

    /// `(values, sql types, position after the image)`, as the Python reader returns them.
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyBytes>,
        pos: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.read(py, data, pos)? {
            Some(image) => Ok(image.into_any()),
            None => {
                self.declined.fetch_add(1, Ordering::Relaxed);
                self.fallback.bind(py).call1((data, pos))
            }
        }
    }

    /// How many images this reader handed to the Python reader.
    #[getter]
    fn declined(&self) -> u64 {
        self.declined.load(Ordering::Relaxed)
    }
}

impl ImageReader {
    fn read<'py>(
        &self,
        py: Python<'py>,
        data_object: &Bound<'py, PyBytes>,
        pos: usize,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let data = data_object.as_bytes();
        let count = self.specs.len();
        let null_bytes = count.div_ceil(8);
        let Some(bitmap) = data.get(pos..pos + null_bytes) else {
            return Ok(None);
        };
        let mut pos = pos + null_bytes;
        let mut values: Vec<Bound<'py, PyAny>> = Vec::with_capacity(count);
        let mut types: Vec<Bound<'py, PyAny>> = Vec::with_capacity(count);
        let mut out = String::with_capacity(32);
        for (i, spec) in self.specs.iter().enumerate() {
            if bitmap[i / 8] >> (i % 8) & 1 == 1 {
                values.push(py.None().into_bound(py));
                types.push(self.null_types[i].bind(py).clone());
                continue;
            }
            if spec.kind == PYTHON {
                let decoded = self.decoders[i].bind(py).call1((data_object, pos))?;
                let (value, sql_type, end): (Bound<'py, PyAny>, Bound<'py, PyAny>, usize) =
                    decoded.extract()?;
                values.push(value);
                types.push(sql_type);
                pos = end;
                continue;
            }
            out.clear();
            let mut sql_type = spec.sql_type;
            let step = match spec.kind {
                INT => integer(data, pos, spec, &mut out).map(|(end, t)| {
                    sql_type = t;
                    end
                }),
                DECIMAL => decimal(data, pos, spec, &mut out),
                DATETIME2 => datetime2(data, pos, spec, &mut out),
                DATE => date(data, pos, &mut out),
                TIME2 => time2(data, pos, spec, &mut out),
                YEAR => year(data, pos, &mut out),
                _ => match text(py, data, pos, spec) {
                    Ok((value, end)) => {
                        values.push(value.into_any());
                        types.push(sql_type.into_pyobject(py)?.into_any());
                        pos = end;
                        continue;
                    }
                    Err(decline) => Err(decline),
                },
            };
            let Ok(end) = step else { return Ok(None) };
            values.push(PyString::new(py, &out).into_any());
            types.push(sql_type.into_pyobject(py)?.into_any());
            pos = end;
        }
        let image = (PyTuple::new(py, values)?, PyTuple::new(py, types)?, pos);
        Ok(Some(image.into_pyobject(py)?))
    }
}
