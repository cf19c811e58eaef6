from array import array
from typing import Any

from numpy.typing import NDArray

def _to_array(arr: NDArray[Any]) -> array[int]: ...
