//! One row image of a rows event, decoded to canal's texts: the compiled twin of the reader
//! that `bridge.parse.binlog.rows._image_reader` generates from `bridge.parse.binlog.values`' decoders.
//!
//! Built once per table definition and present-columns bitmap from one spec per column
//! (`bridge.parse.binlog.compiled.column_spec`); columns without one (FLOAT, TIMESTAMP, ENUM, ...)
//! are decoded by calling their Python decoder from here. Anything this reader does not render exactly like
//! Python (a value past the end of the event, invalid UTF-8, a corrupt DECIMAL group, a
//! negative DATETIME2) makes it call the Python reader for that image instead, which gives
//! the same result or raises the same error.

use crate::digits::{push_int, push_padded, Digits};
use crate::jsonb::push_document;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

const INT: u8 = 1;
const DECIMAL: u8 = 2;
const DATETIME2: u8 = 3;
const DATE: u8 = 4;
const TIME2: u8 = 5;
const YEAR: u8 = 6;
const TEXT: u8 = 7;
const JSON: u8 = 8;
const ENUM: u8 = 9;
const SET: u8 = 10;
/// A column the compiled reader does not render: its Python decoder is called.
const PYTHON: u8 = 0;

const UTF8: i64 = 0;

/// `(kind, a, b, sql_type, d, labels)` as Python builds it (`bridge/parse/binlog/compiled.py`),
/// None for a column decoded by Python.
type SpecTuple = Option<(u8, i64, i64, i64, i64, Vec<String>)>;

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
pub(crate) struct Decline;

pub(crate) type Step<T> = Result<T, Decline>;

fn take(data: &[u8], pos: usize, size: usize) -> Step<&[u8]> {
    data.get(pos..pos + size).ok_or(Decline)
}

fn be_uint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |acc, &b| acc << 8 | u64::from(b))
}

pub(crate) fn le_uint(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0, |acc, &b| acc << 8 | u64::from(b))
}

/// At least two digits; every caller's value is non-negative.
fn two(out: &mut String, value: i64) {
    push_padded(out, value.unsigned_abs(), 2);
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
        push_padded(out, raw, 0);
        sql_type = spec.d;
    } else {
        push_int(out, signed);
    }
    Ok((pos + size, sql_type))
}

const DIG2BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

fn decimal(data: &[u8], pos: usize, spec: &Spec, out: &mut String) -> Step<usize> {
    decimal_text(
        data,
        pos,
        spec.a as usize,
        spec.b as usize,
        spec.d != 0,
        out,
    )
}

/// MySQL's bin2decimal rendered as `BigDecimal.toPlainString()` (plus canal's quirk of
/// dropping a zero trailing partial group, when `canal`), from the digit groups directly.
pub(crate) fn decimal_text(
    data: &[u8],
    pos: usize,
    precision: usize,
    scale: usize,
    canal: bool,
    out: &mut String,
) -> Step<usize> {
    if precision == 0 || precision > 65 || scale > precision {
        return Err(Decline);
    }
    let intg = precision - scale;
    // (bytes, digits) of each group: a partial one, whole ones of nine digits, a partial one.
    let lead = (!intg.is_multiple_of(9)).then(|| (DIG2BYTES[intg % 9], intg % 9));
    let trail = (!scale.is_multiple_of(9)).then(|| (DIG2BYTES[scale % 9], scale % 9));
    let groups = lead
        .into_iter()
        .chain(std::iter::repeat_n((4, 9), intg / 9 + scale / 9))
        .chain(trail);
    let size = lead.map_or(0, |g| g.0) + 4 * (intg / 9 + scale / 9) + trail.map_or(0, |g| g.0);
    // At most 65 digits: 30 bytes, 65 digit characters.
    let mut raw = [0u8; 32];
    raw[..size].copy_from_slice(take(data, pos, size)?);
    let negative = raw[0] & 0x80 == 0;
    if negative {
        raw[..size].iter_mut().for_each(|b| *b = !*b);
    }
    raw[0] &= 0x7f;
    let mut digits = [b'0'; 72];
    let mut len = 0;
    let mut at = 0;
    let mut last_group = 0;
    for (nbytes, ndigits) in groups {
        let value = be_uint(&raw[at..at + nbytes]);
        if value >= 10u64.pow(ndigits as u32) {
            return Err(Decline);
        }
        let text = Digits::new(value, ndigits);
        digits[len..len + ndigits].copy_from_slice(text.as_str().as_bytes());
        len += ndigits;
        at += nbytes;
        last_group = value;
    }
    let tail = scale % 9;
    let mut kept = scale;
    if canal && tail > 0 && last_group == 0 {
        len -= tail;
        kept = scale - tail;
        if kept == 0 {
            digits[len] = b'0';
            len += 1;
            kept = 1;
        }
    }
    let digits = &digits[..len];
    let (whole, fraction) = digits.split_at(len - kept);
    let first = whole.iter().position(|&b| b != b'0').unwrap_or(whole.len());
    if negative && digits.iter().any(|&b| b != b'0') {
        out.push('-');
    }
    if first == whole.len() {
        out.push('0');
    } else {
        out.extend(whole[first..].iter().map(|&b| char::from(b)));
    }
    if kept > 0 {
        out.push('.');
        out.extend(fraction.iter().map(|&b| char::from(b)));
    }
    Ok(pos + size)
}

fn fraction_digits(out: &mut String, text_len: usize, micros: i64, fsp: usize) {
    out.push('.');
    push_padded(out, micros.unsigned_abs(), 6);
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
        push_padded(out, ym.unsigned_abs() / 13, 4);
        out.push('-');
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
        push_padded(out, value.unsigned_abs() >> 9, 4);
        out.push('-');
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
        push_padded(out, u64::from(value) + 1900, 0);
    }
    Ok(pos + 1)
}

/// The bytes of a length-prefixed value at ``pos``, and the position after it.
fn prefixed<'a>(data: &'a [u8], pos: usize, spec: &Spec) -> Step<(&'a [u8], usize)> {
    let prefix = spec.a as usize;
    let len = le_uint(take(data, pos, prefix)?) as usize;
    let start = pos + prefix;
    Ok((take(data, start, len)?, start + len))
}

/// A length-prefixed value: UTF-8 text, or binary bytes as ISO-8859-1 (canal's BLOB text).
fn text<'py>(
    py: Python<'py>,
    data: &[u8],
    pos: usize,
    spec: &Spec,
) -> Step<(Bound<'py, PyString>, usize)> {
    let (raw, end) = prefixed(data, pos, spec)?;
    let value = if spec.b == UTF8 {
        PyString::new(py, std::str::from_utf8(raw).map_err(|_| Decline)?)
    } else {
        let latin1: String = raw.iter().map(|&b| char::from(b)).collect();
        PyString::new(py, &latin1)
    };
    Ok((value, end))
}

/// ``text`` appended to ``out``.
fn text_into(data: &[u8], pos: usize, spec: &Spec, out: &mut String) -> Step<usize> {
    let (raw, end) = prefixed(data, pos, spec)?;
    if spec.b == UTF8 {
        out.push_str(std::str::from_utf8(raw).map_err(|_| Decline)?);
    } else {
        out.extend(raw.iter().map(|&b| char::from(b)));
    }
    Ok(end)
}

/// MySQL's binary JSON (``spec.d``: canal's decimal spelling); an empty value is "".
fn json(data: &[u8], pos: usize, spec: &Spec, out: &mut String) -> Step<usize> {
    let (doc, end) = prefixed(data, pos, spec)?;
    if !doc.is_empty() {
        push_document(doc, spec.d != 0, out)?;
    }
    Ok(end)
}

/// An ENUM (``labels`` its labels) or SET (``labels`` its members) of ``spec.a`` bytes: the
/// label(s), or with ``spec.b`` canal's index or bitmask; a value without a label declines
/// (Python names the error).
fn labelled(
    data: &[u8],
    pos: usize,
    spec: &Spec,
    labels: &[String],
    out: &mut String,
) -> Step<usize> {
    let size = spec.a as usize;
    let value = le_uint(take(data, pos, size)?);
    if spec.b != 0 {
        push_padded(out, value, 0);
    } else if spec.kind == ENUM {
        if value > 0 {
            out.push_str(labels.get(value as usize - 1).ok_or(Decline)?);
        }
    } else {
        if labels.len() < 64 && value >> labels.len() != 0 {
            return Err(Decline);
        }
        let mut first = true;
        for (i, label) in labels.iter().enumerate().take(64) {
            if value >> i & 1 == 1 {
                if !first {
                    out.push(',');
                }
                out.push_str(label);
                first = false;
            }
        }
    }
    Ok(pos + size)
}

/// A value of any compiled kind but text, appended to ``out``: (position after it, sql type).
fn scalar(
    data: &[u8],
    pos: usize,
    spec: &Spec,
    labels: &[String],
    out: &mut String,
) -> Step<(usize, i64)> {
    let sql_type = spec.sql_type;
    match spec.kind {
        INT => integer(data, pos, spec, out),
        DECIMAL => decimal(data, pos, spec, out).map(|end| (end, sql_type)),
        DATETIME2 => datetime2(data, pos, spec, out).map(|end| (end, sql_type)),
        DATE => date(data, pos, out).map(|end| (end, sql_type)),
        TIME2 => time2(data, pos, spec, out).map(|end| (end, sql_type)),
        YEAR => year(data, pos, out).map(|end| (end, sql_type)),
        JSON => json(data, pos, spec, out).map(|end| (end, sql_type)),
        ENUM | SET => labelled(data, pos, spec, labels, out).map(|end| (end, sql_type)),
        _ => Err(Decline),
    }
}

/// One image decoded into Rust text: the values side by side in ``texts``, each column's
/// span of it (None: NULL) and sql type. Reused from image to image (``decode_into``).
#[derive(Default)]
pub(crate) struct NativeImage {
    texts: String,
    spans: Vec<Option<(usize, usize)>>,
    pub(crate) types: Vec<i64>,
}

impl NativeImage {
    /// Frees the buffers when they hold more than ``bytes`` of text.
    pub(crate) fn let_go_above(&mut self, bytes: usize) {
        if self.texts.capacity() > bytes {
            *self = NativeImage::default();
        }
    }

    /// The values, column by column (None for NULL).
    pub(crate) fn values(&self) -> Vec<Option<&str>> {
        self.spans
            .iter()
            .map(|span| span.map(|(start, end)| &self.texts[start..end]))
            .collect()
    }
}

#[pyclass(frozen, module = "canal_bridge_native")]
pub struct ImageReader {
    specs: Vec<Spec>,
    /// Per column, its ENUM labels or SET members (empty for other kinds).
    labels: Vec<Vec<String>>,
    /// Per column, the sql type of a NULL value.
    null_types: Vec<i64>,
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
        let mut labels = Vec::with_capacity(specs.len());
        for spec in specs {
            let Some((kind, a, b, sql_type, d, column_labels)) = spec else {
                labels.push(Vec::new());
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
                TEXT | JSON => (1..=4).contains(&a),
                ENUM | SET => (1..=8).contains(&a),
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
            labels.push(column_labels);
        }
        Ok(Self {
            specs: checked,
            labels,
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
    /// Whether every column has a compiled decoder (``decode_into`` needs no Python).
    pub(crate) fn compiled_only(&self) -> bool {
        self.specs.iter().all(|spec| spec.kind != PYTHON)
    }

    /// The image at ``pos`` decoded into ``image`` (what ``read`` returns, as Rust text);
    /// the position after it, or ``Decline`` where ``read`` would hand it to Python. Call
    /// only where ``compiled_only``.
    pub(crate) fn decode_into(
        &self,
        data: &[u8],
        pos: usize,
        image: &mut NativeImage,
    ) -> Step<usize> {
        image.texts.clear();
        image.spans.clear();
        image.types.clear();
        let null_bytes = self.specs.len().div_ceil(8);
        let bitmap = take(data, pos, null_bytes)?;
        let mut pos = pos + null_bytes;
        for (i, spec) in self.specs.iter().enumerate() {
            if bitmap[i / 8] >> (i % 8) & 1 == 1 {
                image.spans.push(None);
                image.types.push(self.null_types[i]);
                continue;
            }
            let start = image.texts.len();
            let (end, sql_type) = if spec.kind == TEXT {
                (text_into(data, pos, spec, &mut image.texts)?, spec.sql_type)
            } else {
                scalar(data, pos, spec, &self.labels[i], &mut image.texts)?
            };
            image.spans.push(Some((start, image.texts.len())));
            image.types.push(sql_type);
            pos = end;
        }
        Ok(pos)
    }

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
                types.push(self.null_types[i].into_pyobject(py)?.into_any());
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
            if spec.kind == TEXT {
                let Ok((value, end)) = text(py, data, pos, spec) else {
                    return Ok(None);
                };
                values.push(value.into_any());
                types.push(spec.sql_type.into_pyobject(py)?.into_any());
                pos = end;
                continue;
            }
            out.clear();
            let Ok((end, sql_type)) = scalar(data, pos, spec, &self.labels[i], &mut out) else {
                return Ok(None);
            };
            values.push(PyString::new(py, &out).into_any());
            types.push(sql_type.into_pyobject(py)?.into_any());
            pos = end;
        }
        let image = (PyTuple::new(py, values)?, PyTuple::new(py, types)?, pos);
        Ok(Some(image.into_pyobject(py)?))
    }
}
