//! Token bitmasks in caller-owned memory: any C-contiguous int32 array
//! that exposes NumPy's array interface, or a CPU torch tensor (through
//! its NumPy view), shape `(batch, words)` or `(words,)`.
//!
//! Every property the writes rely on — dtype, contiguity, alignment,
//! writability, shape — is checked here with a `ValueError` or
//! `TypeError` naming it; nothing reaches the raw pointer otherwise. Only
//! a real `numpy.ndarray` is trusted to describe its own memory (any
//! object can claim an `__array_interface__`).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

/// `numpy.ndarray`, imported once.
static NDARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A bitmask array checked for writing: `rows` rows of `words` 32-bit
/// words each, one after another. Holds the array object, so its memory
/// stays alive for as long as this value does.
pub struct MaskArray<'py> {
    _owner: Bound<'py, PyAny>,
    address: usize,
    /// Rows (1 for a one-dimensional array).
    pub rows: usize,
    /// Words per row.
    pub words: usize,
}

impl<'py> MaskArray<'py> {
    /// Checks `array` (a NumPy array, or a CPU torch tensor through its
    /// NumPy view) and borrows its memory.
    pub fn new(array: &Bound<'py, PyAny>) -> PyResult<Self> {
        let ndarray = NDARRAY.import(array.py(), "numpy", "ndarray")?;
        let owner = if array.is_instance(ndarray)? {
            array.clone()
        } else if is_torch_tensor(array)? {
            let device: String = array.getattr("device")?.getattr("type")?.extract()?;
            if device != "cpu" {
                return Err(PyValueError::new_err(format!(
                    "the bitmask is on `{device}`: fill it on the CPU, then move it to the device \
                     (`bitmask.to(device, non_blocking=True)`)"
                )));
            }
            let view = array.call_method0("numpy")?;
            if !view.is_instance(ndarray)? {
                return Err(PyTypeError::new_err(
                    "the tensor's `.numpy()` is not a NumPy array",
                ));
            }
            view
        } else {
            return Err(PyTypeError::new_err(format!(
                "a bitmask is a NumPy array or a CPU torch tensor of int32, not `{}`",
                array.get_type().name()?
            )));
        };
        let interface = owner.getattr("__array_interface__")?;
        let interface = interface
            .cast::<PyDict>()
            .map_err(|_| PyTypeError::new_err("`__array_interface__` is not a dict"))?;
        let item = |key: &str| -> PyResult<Bound<'py, PyAny>> {
            interface.get_item(key)?.ok_or_else(|| {
                PyTypeError::new_err(format!("`__array_interface__` has no `{key}`"))
            })
        };
        let typestr: String = item("typestr")?.extract()?;
        if !matches!(typestr.as_str(), "<i4" | "<u4" | "=i4" | "=u4") || cfg!(target_endian = "big")
        {
            return Err(PyValueError::new_err(format!(
                "the bitmask's dtype must be int32, not `{typestr}` \
                 (allocate it with xg.allocate_token_bitmask)"
            )));
        }
        let shape: Vec<usize> = item("shape")?.extract()?;
        let (rows, words) = match shape.as_slice() {
            [words] => (1, *words),
            [rows, words] => (*rows, *words),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "the bitmask must have shape (batch, words) or (words,), not {shape:?}"
                )));
            }
        };
        let (address, readonly): (usize, bool) = item("data")?.extract()?;
        if readonly {
            return Err(PyValueError::new_err("the bitmask is read-only"));
        }
        let strides: Option<Vec<isize>> = interface
            .get_item("strides")?
            .map(|s| s.extract())
            .transpose()?
            .flatten();
        if let Some(strides) = strides
            && !c_contiguous(&shape, &strides)
        {
            return Err(PyValueError::new_err(format!(
                "the bitmask must be C-contiguous (strides {strides:?} for shape {shape:?}); \
                 use `.contiguous()` or `numpy.ascontiguousarray`"
            )));
        }
        if rows * words > 0 && (address == 0 || address % align_of::<u32>() != 0) {
            return Err(PyValueError::new_err(
                "the bitmask's memory is not aligned to 4 bytes",
            ));
        }
        Ok(Self {
            _owner: owner,
            address,
            rows,
            words,
        })
    }

    /// The whole array as words, row after row.
    #[allow(unsafe_code)]
    pub fn words_mut(&mut self) -> &mut [u32] {
        let len = self.rows * self.words;
        if len == 0 {
            return &mut [];
        }
        // SAFETY: `_owner` is a `numpy.ndarray`, whose array interface
        // describes its own buffer, and `new` checked that it is a
        // writable, C-contiguous, 4-byte-aligned buffer of `len` 32-bit
        // integers at `address`; `_owner` keeps the array (and so the
        // buffer) alive while this borrow lasts, and `&mut self` makes it
        // the only slice made from this value.
        unsafe { std::slice::from_raw_parts_mut(self.address as *mut u32, len) }
    }

    /// Checks that row `index` exists.
    pub fn check_row(&self, index: usize) -> PyResult<()> {
        if index >= self.rows {
            return Err(PyValueError::new_err(format!(
                "row {index} is outside the bitmask's {} rows",
                self.rows
            )));
        }
        Ok(())
    }

    /// Checks that a row holds `needed` words (a vocabulary's mask).
    pub fn check_width(&self, needed: usize) -> PyResult<()> {
        if self.words < needed {
            return Err(PyValueError::new_err(format!(
                "the bitmask has {} words per row; the vocabulary needs {needed} \
                 (xg.get_bitmask_shape(batch, vocab_size))",
                self.words
            )));
        }
        Ok(())
    }
}

fn is_torch_tensor(object: &Bound<'_, PyAny>) -> PyResult<bool> {
    let module: String = object.get_type().getattr("__module__")?.extract()?;
    Ok(module == "torch" || module.starts_with("torch."))
}

/// Whether byte `strides` lay `shape` out row after row with 4-byte items.
fn c_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    let mut expected = 4isize;
    for (&size, &stride) in shape.iter().zip(strides).rev() {
        if size > 1 && stride != expected {
            return false;
        }
        expected *= isize::try_from(size).unwrap_or(isize::MAX);
    }
    shape.len() == strides.len()
}

/// Whether the first `bits` bits of `row` are all set: the mask allows
/// every token and need not be applied.
pub fn allows_all(row: &[u32], bits: usize) -> bool {
    let full = bits / 32;
    if row[..full].iter().any(|&w| w != u32::MAX) {
        return false;
    }
    let rest = bits % 32;
    rest == 0 || row[full] & ((1u32 << rest) - 1) == (1u32 << rest) - 1
}
