//! MySQL's partial JSON updates applied to a binary document: the compiled twin of
//! `bridge.parse.binlog.json_diff.read_diffs` and `apply_diffs`, which were most of the cost
//! of a PARTIAL_UPDATE row (decoding the containers on a diff's path and writing the document
//! back).
//!
//! Only what Python would apply without an error is applied here. Anything else declines and
//! Python decides, raising the error that names what is wrong: a diff list, path or value
//! that is malformed, a diff that does not fit the document, a path member name with JSON
//! escapes or control characters (Python reads those with a JSON parser), an object with a
//! repeated key, a key or container too large for MySQL's large format.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::packed_int;
use crate::image::{le_uint, Decline, Step};
use crate::jsonb::variable_length;

const REPLACE: u8 = 0;
const INSERT: u8 = 1;
const REMOVE: u8 = 2;

const STRING: u8 = 12;
const OPAQUE: u8 = 15;
/// `_WHITESPACE`: what MySQL's path parser skips between tokens.
const WHITESPACE: &[u8] = b" \t\n\x0b\x0c\r";
const LARGE_KEY_SIZE: usize = 6; // key offset u32, key length u16
const LARGE_VALUE_SIZE: usize = 5; // value type u8, offset or inlined value u32

/// The document `doc` (type byte, then the value) after the diff list `data[start..end]`
/// (the bytes after its 4-byte length), as binary JSON; None where Python must decide.
#[pyfunction]
pub fn apply_json_diffs<'py>(
    py: Python<'py>,
    doc: &[u8],
    data: &[u8],
    start: usize,
    end: usize,
) -> Option<Bound<'py, PyBytes>> {
    let diffs = data.get(start..end)?;
    let applied = applied(doc, diffs).ok()?;
    Some(PyBytes::new(py, &applied))
}

fn applied(doc: &[u8], diffs: &[u8]) -> Step<Vec<u8>> {
    let (&kind, body) = doc.split_first().ok_or(Decline)?;
    let diffs = read_diffs(diffs)?;
    let mut root = Node::Raw(kind, body);
    for diff in &diffs {
        apply(&mut root, diff)?;
    }
    let mut out = Vec::with_capacity(doc.len() + 64);
    let mut value = Vec::new();
    out.push(encode(&root, &mut value)?);
    out.extend_from_slice(&value);
    Ok(out)
}

// ------------------------------------------------------------------------------- the diff list

/// An array cell `[index]` or `[last - index]`.
#[derive(Clone, Copy)]
struct Cell {
    index: u64,
    from_end: bool,
}

impl Cell {
    /// `Cell.position`: the position in an array of `length` elements (clamped to 0..length)
    /// and whether it names an existing element.
    fn position(self, length: usize) -> (usize, bool) {
        let length = length as u64;
        let at = if self.from_end {
            if self.index < length {
                length - self.index - 1
            } else {
                0
            }
        } else {
            self.index.min(length)
        };
        (at as usize, self.index < length)
    }
}

enum Leg<'a> {
    Member(&'a [u8]),
    Cell(Cell),
}

struct Diff<'a> {
    operation: u8,
    path: Vec<Leg<'a>>,
    value: Option<&'a [u8]>,
}

fn read_diffs(data: &[u8]) -> Step<Vec<Diff<'_>>> {
    let mut diffs = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let operation = data[pos];
        if operation > REMOVE {
            return Err(Decline);
        }
        let (length, at) = packed_size(data, pos + 1)?;
        let path = data
            .get(at..at.checked_add(length).ok_or(Decline)?)
            .ok_or(Decline)?;
        pos = at + length;
        let mut value = None;
        if operation != REMOVE {
            let (length, at) = packed_size(data, pos)?;
            if length == 0 || length > data.len() - at {
                return Err(Decline);
            }
            value = Some(&data[at..at + length]);
            pos = at + length;
        }
        diffs.push(Diff {
            operation,
            path: parse_path(path)?,
            value,
        });
    }
    Ok(diffs)
}

/// `packed.read_packed_int` within `data`, as a size.
fn packed_size(data: &[u8], pos: usize) -> Step<(usize, usize)> {
    let (value, at) = packed_int(data, pos, data.len()).ok_or(Decline)?;
    Ok((usize::try_from(value).map_err(|_| Decline)?, at))
}

/// `json_diff.parse_path`, on the path's UTF-8 bytes (every token of the syntax is ASCII,
/// which no byte of a multi-byte character is).
fn parse_path(raw: &[u8]) -> Step<Vec<Leg<'_>>> {
    std::str::from_utf8(raw).map_err(|_| Decline)?;
    let mut legs = Vec::new();
    let mut at = skip_space(raw, 0);
    if raw.get(at) != Some(&b'$') {
        return Err(Decline);
    }
    at = skip_space(raw, at + 1);
    while at < raw.len() {
        let leg;
        (leg, at) = match raw[at] {
            b'.' => member(raw, skip_space(raw, at + 1))?,
            b'[' => cell(raw, skip_space(raw, at + 1))?,
            _ => return Err(Decline),
        };
        legs.push(leg);
        at = skip_space(raw, at);
    }
    Ok(legs)
}

fn skip_space(text: &[u8], mut at: usize) -> usize {
    while at < text.len() && WHITESPACE.contains(&text[at]) {
        at += 1;
    }
    at
}

/// `.name` or `."name"`, after the dot; a name that a JSON string parser would read other
/// than as its bytes (escapes, quotes, control characters) declines.
fn member(text: &[u8], at: usize) -> Step<(Leg<'_>, usize)> {
    let plain = |name: &[u8]| !name.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20);
    if *text.get(at).ok_or(Decline)? == b'"' {
        let close = at
            + 1
            + text[at + 1..]
                .iter()
                .position(|&b| b == b'"')
                .ok_or(Decline)?;
        let name = &text[at + 1..close];
        if !plain(name) {
            return Err(Decline);
        }
        return Ok((Leg::Member(name), close + 1));
    }
    let mut end = at;
    while end < text.len() && !WHITESPACE.contains(&text[end]) && !b"[.*".contains(&text[end]) {
        end += 1;
    }
    let name = &text[at..end];
    if name.is_empty() || !plain(name) {
        return Err(Decline);
    }
    Ok((Leg::Member(name), end))
}

/// `[n]`, `[last]` or `[last - n]`, after the bracket.
fn cell(text: &[u8], mut at: usize) -> Step<(Leg<'_>, usize)> {
    let from_end = text[at..].starts_with(b"last");
    if from_end {
        at = skip_space(text, at + 4);
        if *text.get(at).ok_or(Decline)? != b'-' {
            let leg = Leg::Cell(Cell { index: 0, from_end });
            return Ok((leg, close(text, at)?));
        }
        at = skip_space(text, at + 1);
    }
    let digits = text[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 10 {
        return Err(Decline);
    }
    let index = text[at..at + digits]
        .iter()
        .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
    if index > 0xFFFF_FFFF {
        return Err(Decline);
    }
    let leg = Leg::Cell(Cell { index, from_end });
    Ok((leg, close(text, skip_space(text, at + digits))?))
}

fn close(text: &[u8], at: usize) -> Step<usize> {
    if text.get(at) != Some(&b']') {
        return Err(Decline);
    }
    Ok(at + 1)
}

// ----------------------------------------------------------------------- applying the diffs

/// A value kept as binary JSON (type, bytes), or a container decoded one level.
enum Node<'a> {
    Raw(u8, &'a [u8]),
    Object(Vec<(&'a [u8], Node<'a>)>),
    Array(Vec<Node<'a>>),
}

/// `json_diff._apply`.
fn apply<'a>(root: &mut Node<'a>, diff: &Diff<'a>) -> Step<()> {
    let (last, parents) = diff.path.split_last().ok_or(Decline)?;
    let parent = walk(root, parents)?;
    let value = match diff.value {
        Some(bytes) => {
            let (&kind, body) = bytes.split_first().ok_or(Decline)?;
            Some(Node::Raw(kind, body))
        }
        None => None,
    };
    match (parent, last) {
        (Node::Object(members), Leg::Member(name)) => {
            let found = members.iter().position(|(key, _)| key == name);
            if found.is_some() != (diff.operation != INSERT) {
                return Err(Decline);
            }
            match (found, value) {
                (Some(i), None) => {
                    members.remove(i);
                }
                (Some(i), Some(value)) => members[i].1 = value,
                (None, Some(value)) => members.push((name, value)),
                (None, None) => return Err(Decline),
            }
        }
        (Node::Array(items), Leg::Cell(cell)) => {
            let (at, within) = cell.position(items.len());
            match value {
                None if within => {
                    items.remove(at);
                }
                Some(value) if diff.operation == REPLACE && within => items[at] = value,
                Some(value) if diff.operation != REPLACE => items.insert(at, value),
                _ => return Err(Decline),
            }
        }
        _ => return Err(Decline),
    }
    Ok(())
}

/// `json_diff._walk`: the container at `legs`, decoding those on the way in place.
fn walk<'n, 'a>(mut node: &'n mut Node<'a>, legs: &[Leg<'a>]) -> Step<&'n mut Node<'a>> {
    open(node)?;
    for leg in legs {
        let child = match (node, leg) {
            (Node::Object(members), Leg::Member(name)) => {
                let (_, child) = members
                    .iter_mut()
                    .find(|(key, _)| key == name)
                    .ok_or(Decline)?;
                child
            }
            (Node::Array(items), Leg::Cell(cell)) => {
                let (at, within) = cell.position(items.len());
                if !within {
                    return Err(Decline);
                }
                &mut items[at]
            }
            _ => return Err(Decline),
        };
        open(child)?;
        node = child;
    }
    Ok(node)
}

fn open(node: &mut Node<'_>) -> Step<()> {
    if let Node::Raw(kind, data) = *node {
        if kind > 3 {
            return Err(Decline);
        }
        *node = decode_container(kind, data)?;
    }
    Ok(())
}

fn uint(data: &[u8], at: usize, size: usize) -> Step<usize> {
    let bytes = data.get(at..at + size).ok_or(Decline)?;
    usize::try_from(le_uint(bytes)).map_err(|_| Decline)
}

/// The bytes of an inlined value of type `kind` (literal, int16, uint16; in a large
/// container also int32, uint32).
fn inline_size(kind: u8) -> Option<usize> {
    match kind {
        4 => Some(1),
        5 | 6 => Some(2),
        7 | 8 => Some(4),
        _ => None,
    }
}

/// `json_diff._decode_container`: one level of an object or array; its elements stay binary.
fn decode_container(kind: u8, data: &[u8]) -> Step<Node<'_>> {
    let (large, is_object) = (kind & 1 == 1, kind < 2);
    let osize = if large { 4 } else { 2 };
    let count = uint(data, 0, osize)?;
    let key_entries = if is_object { count * (osize + 2) } else { 0 };
    let values_at = 2 * osize + key_entries;
    if values_at + count * (1 + osize) > data.len() {
        return Err(Decline);
    }
    let mut elements = Vec::with_capacity(count);
    for i in 0..count {
        let entry = values_at + i * (1 + osize);
        let element_kind = data[entry];
        let (at, size) = match inline_size(element_kind) {
            Some(size) if large || element_kind <= 6 => (entry + 1, size),
            _ => {
                let at = uint(data, entry + 1, osize)?;
                (at, value_size(element_kind, data, at)?)
            }
        };
        elements.push(Node::Raw(
            element_kind,
            data.get(at..at + size).ok_or(Decline)?,
        ));
    }
    if !is_object {
        return Ok(Node::Array(elements));
    }
    let mut keys = Vec::with_capacity(count);
    for i in 0..count {
        let entry = 2 * osize + i * (osize + 2);
        let (key_at, key_length) = (uint(data, entry, osize)?, uint(data, entry + osize, 2)?);
        keys.push(data.get(key_at..key_at + key_length).ok_or(Decline)?);
    }
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    if sorted.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(Decline); // a repeated key: Python's dict keeps one of them
    }
    Ok(Node::Object(keys.into_iter().zip(elements).collect()))
}

/// `json_diff._value_size`: the bytes of the (not inlined) value of type `kind` at `at`.
fn value_size(kind: u8, data: &[u8], at: usize) -> Step<usize> {
    match kind {
        0..=3 => {
            let large = kind & 1 == 1;
            uint(
                data,
                at + if large { 4 } else { 2 },
                if large { 4 } else { 2 },
            )
        }
        4..=8 => inline_size(kind).ok_or(Decline),
        9..=11 => Ok(8),
        STRING => {
            let (length, start) = variable_length(data, at)?;
            Ok(start - at + length)
        }
        OPAQUE => {
            let (length, start) = variable_length(data, at + 1)?;
            Ok(start - at + length)
        }
        _ => Err(Decline),
    }
}

/// `json_diff.encode_node`: appends `node`'s bytes to `out` and returns its type; decoded
/// containers are written large, object keys sorted by length, then bytes.
fn encode(node: &Node<'_>, out: &mut Vec<u8>) -> Step<u8> {
    let (kind, keys, values): (u8, Vec<&[u8]>, Vec<&Node<'_>>) = match node {
        Node::Raw(kind, data) => {
            out.extend_from_slice(data);
            return Ok(*kind);
        }
        Node::Object(members) => {
            let mut sorted: Vec<_> = members.iter().collect();
            sorted.sort_by(|(a, _), (b, _)| (a.len(), *a).cmp(&(b.len(), *b)));
            (
                1,
                sorted.iter().map(|(k, _)| *k).collect(),
                sorted.iter().map(|(_, v)| v).collect(),
            )
        }
        Node::Array(items) => (3, Vec::new(), items.iter().collect()),
    };
    let count = u32::try_from(values.len()).map_err(|_| Decline)?;
    let offset = 8 + keys.len() * LARGE_KEY_SIZE + values.len() * LARGE_VALUE_SIZE;
    let (mut entries, mut tail) = (Vec::with_capacity(offset), Vec::new());
    let at = |tail: &Vec<u8>| u32::try_from(offset + tail.len()).map_err(|_| Decline);
    for key in &keys {
        entries.extend_from_slice(&at(&tail)?.to_le_bytes());
        entries.extend_from_slice(&u16::try_from(key.len()).map_err(|_| Decline)?.to_le_bytes());
        tail.extend_from_slice(key);
    }
    let mut value = Vec::new();
    for node in values {
        value.clear();
        let kind = encode(node, &mut value)?;
        entries.push(kind);
        if inline_size(kind).is_some() {
            entries.extend_from_slice(&value);
            entries.extend(std::iter::repeat_n(0, 4usize.saturating_sub(value.len())));
        } else {
            entries.extend_from_slice(&at(&tail)?.to_le_bytes());
            tail.extend_from_slice(&value);
        }
    }
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&at(&tail)?.to_le_bytes());
    out.extend_from_slice(&entries);
    out.extend_from_slice(&tail);
    Ok(kind)
}
