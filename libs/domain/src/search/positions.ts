/** Smallest index in [0, count) where the monotone `predicate` turns true; `count` if it never does. */
export function firstPosition(count: number, predicate: (index: number) => boolean): number {
  let low = 0;
  let high = count;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (predicate(mid)) high = mid;
    else low = mid + 1;
  }
  return low;
}

/** Index of the first element of the ascending `positions` that is >= `position`. */
export function lowerBound(positions: Int32Array, position: number): number {
  return firstPosition(positions.length, (i) => (positions[i] as number) >= position);
}
