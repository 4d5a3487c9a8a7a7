//! The record of one binlog rows event written straight from the event's bytes: its row images
//! decoded by the plans' compiled readers into Rust text (`image.rs`), then canal's FlatMessage
//! JSON and record key as `flat.rs` writes them from decoded rows. No Python value, tuple or
//! row object is made per row; the same bytes as decoding the rows and rendering them.
//!
//! All rows of an event share its plans (one present-columns bitmap per image kind), so the
//! message has one plan's type maps and key columns. Anything else — a column decoded in
//! Python, an image the compiled reader declines, no rows, a plan without columns — returns
//! None, and the caller decodes the rows in Python, which gives the record or the error.

use std::cell::RefCell;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::flat::{
    plan_info, record_parts, template, write_changed, Message, PlanInfo, RecordParts, TypeMaps,
    What, DELETE, UPDATE,
};
use crate::image::{ImageReader, NativeImage};

thread_local! {
    /// The images of the row being written (an event's data image and an UPDATE's before
    /// image), kept from call to call so that their buffers are allocated once.
    static IMAGES: RefCell<(NativeImage, NativeImage)> = RefCell::new(Default::default());
}

/// Buffers of an image larger than this are let go after the event (a LONGBLOB row would
/// otherwise keep its size in the reader's process for good).
const KEPT_IMAGE_BYTES: usize = 1 << 20;

/// The rows of ``data`` from ``pos`` into ``message``: each data image (read by ``reader``
/// of ``plan``) and, for an UPDATE, its before image (``old``: reader, plan, whether both
/// images have the same columns) first. How many rows; None where the Python path decides,
/// or once the message's rows alone come to more than ``limit`` bytes.
fn collect(
    data: &[u8],
    mut pos: usize,
    (reader, plan, image): (&ImageReader, &PlanInfo, &mut NativeImage),
    mut old: Option<(&ImageReader, &PlanInfo, bool, &mut NativeImage)>,
    message: &mut Message<'_>,
    limit: usize,
) -> Option<usize> {
    let mut rows = 0;
    while pos < data.len() {
        if let Some((old_reader, _, _, old_image)) = old.as_mut() {
            pos = old_reader.decode_into(data, pos, old_image).ok()?;
        }
        pos = reader.decode_into(data, pos, image).ok()?;
        let values = image.values();
        message.add_data_row(plan, &values, &plan.pk_positions);
        if let Some((_, old_plan, same_plan, old_image)) = old.as_ref() {
            let out = message.next_old();
            write_changed(
                out,
                old_plan,
                &old_image.values(),
                *same_plan,
                &plan.names,
                &values,
            )?;
        }
        rows += 1;
        if message.rows_len() > limit {
            return None;
        }
    }
    (rows > 0).then_some(rows)
}

/// A plan's compiled reader and ``PlanInfo``, where it has both and decodes every column.
fn compiled<'py>(
    plan: &Bound<'py, PyAny>,
) -> PyResult<Option<(Bound<'py, ImageReader>, Bound<'py, PlanInfo>)>> {
    let Ok(reader) = plan
        .getattr(intern!(plan.py(), "read"))?
        .cast_into::<ImageReader>()
    else {
        return Ok(None);
    };
    if !reader.get().compiled_only() {
        return Ok(None);
    }
    Ok(plan_info(plan)?
        .filter(|info| !info.get().names.is_empty())
        .map(|info| (reader, info)))
}

/// The record of a rows event whose images start at ``pos`` of ``body`` (after its column
/// bitmaps), as ``rows_record_parts`` returns it for the same rows decoded; ``before`` and
/// ``after`` are the event's plans (``bridge.parse.binlog.rows.Plan``; the same one but for an
/// UPDATE). None where the Python path must decide, or where value and key come to more than
/// ``limit`` bytes.
#[pyfunction]
#[pyo3(signature = (database, table, kind, event_type, es, gtid, before, after, body, pos, limit))]
#[allow(clippy::too_many_arguments)]
pub fn rows_event_parts<'py>(
    py: Python<'py>,
    database: &str,
    table: &str,
    kind: u8,
    event_type: &str,
    es: i64,
    gtid: &str,
    before: &Bound<'py, PyAny>,
    after: &Bound<'py, PyAny>,
    body: &Bound<'py, PyBytes>,
    pos: usize,
    limit: usize,
) -> PyResult<Option<RecordParts<'py>>> {
    let what = What {
        database,
        table,
        kind,
        event_type,
        es,
        sql: "",
        gtid,
    };
    event_parts(py, &what, before, after, body.as_bytes(), pos, limit)
}

/// ``rows_event_parts`` of the images from ``pos`` of ``body`` (for ``EventConverter``'s
/// compiled read loop too, which has the body inside the event's bytes).
pub(crate) fn event_parts<'py>(
    py: Python<'py>,
    what: &What<'_>,
    before: &Bound<'py, PyAny>,
    after: &Bound<'py, PyAny>,
    body: &[u8],
    pos: usize,
    limit: usize,
) -> PyResult<Option<RecordParts<'py>>> {
    let kind = what.kind;
    let Some((reader, info)) = compiled(if kind == DELETE { before } else { after })? else {
        return Ok(None);
    };
    let old = if kind == UPDATE {
        let Some((old_reader, old_info)) = compiled(before)? else {
            return Ok(None);
        };
        let same_plan = before.is(after) || old_info.get().names == info.get().names;
        Some((old_reader, old_info, same_plan))
    } else {
        None
    };
    let plan = info.get();
    let old = old.as_ref().map(|(r, i, same)| (r.get(), i.get(), *same));
    let collected = IMAGES.with_borrow_mut(|(image, old_image)| {
        let mut message = Message::new(plan.pk_names.clone());
        let rows = collect(
            body,
            pos,
            (reader.get(), plan, image),
            old.map(|(r, i, same)| (r, i, same, &mut *old_image)),
            &mut message,
            limit,
        );
        let last_types = image.types.clone();
        image.let_go_above(KEPT_IMAGE_BYTES);
        old_image.let_go_above(KEPT_IMAGE_BYTES);
        Some((message, rows?, last_types))
    });
    let Some((mut message, rows, last_types)) = collected else {
        return Ok(None);
    };
    message.types = TypeMaps::One {
        info: info.clone(),
        sql_types: Some(PyTuple::new(py, last_types)?),
    };
    Ok(template(&message, what, limit)?.map(|t| record_parts(py, rows, &t)))
}
