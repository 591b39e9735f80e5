"""pyctrecon: CT and PET reconstruction on NVIDIA GPUs and the CPU.

The Python binding of libctrecon (docs/python.md). Arrays are numpy arrays
whose shapes are the reverse of the library's dims: a volume (nz, ny, nx),
cone-beam projections (nviews, nv, nu), sinograms (nslices, nangles, nbins).
C-contiguous float32 input is used without a copy; other real arrays are
converted to float32 (a copy); results are new arrays or go into ``out=``.
Library errors raise a subclass of CtreconError per status; computations
release the GIL, report progress (``progress=``: a callable or a tqdm bar)
and stop on Ctrl-C (KeyboardInterrupt) without leaving a complete-looking
output file.
"""
from ._core import (CancelledError, Context, CtreconError, DeviceError, DeviceOutOfMemoryError,
                    FFTError, FileIOError, FormatError, GeometryError, InternalError,
                    InvalidArgumentError, NoDeviceError, OutOfMemoryError, SizeMismatchError,
                    UnsupportedError, cuda_device_count, cuda_device_info, default_context,
                    features, logger, memory_budgets, version)
from . import io
from .conebeam import (Backprojector, backproject_reference, fdk, fdk_backproject,
                       fdk_file, fdk_filter, plan_fdk, ramp_response)
from .geometry import ConeGeometry, ParallelGeometry, Volume
from .iterative import Projector, iterate, iterate_plot, plan_iterate
from .live import LiveUpdate, Source, follow, replay
from .metrics import size_parse, volume_compare
from .parbeam import (Corrections, center_find, fbp, fbp_backproject, fbp_backproject_reference,
                      fbp_filter, fbp_projections, fbp_stream, flatfield_average,
                      flatfield_sinograms, paganin_filter, paganin_margin, paganin_response,
                      sinogram_dezinger, sinogram_remove_stripes, stitch_360)
from .pet import (PetHisto, PetPhantom, PetProjector, PetSystem, pet_metrics, pet_plot_crc_noise,
                  pet_project_fft, pet_reconstruct, pet_simulate)
from .phantom import Phantom
from .plot import show, show_projections
from .rabbitct import (RabbitCTFile, RabbitCTWriter, rabbitct_score, rabbitct_to_hu,
                       rabbitct_weight)

__version__ = version()

__all__ = [n for n in dir() if not n.startswith("_")]
