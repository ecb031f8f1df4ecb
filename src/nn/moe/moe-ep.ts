/**
 * Expert parallelism's bookkeeping for one MoE layer on one of ep workers (nn/expert-parallel.ts), on plain arrays.
 *
 * The routing group is the whole micro-batch, as on one device: member i holds its tokens [i·S/ep, (i+1)·S/ep) of the
 * group's S (sequence-major, so a contiguous block), gathers every member's router probabilities and routes the whole
 * group with the one-device kernel (moeRoute), so top-k, the positions in token order (first choices before second
 * ones), the capacity ⌈capacityFactor·k·S/E⌉ and the drops are one device's. The experts' buffer of the group, [E·cap, C]
 * (expert e's rows e·cap …), is cut by owner: member o holds experts [o·E/ep, (o+1)·E/ep), so rows
 * [o·(E/ep)·cap, (o+1)·(E/ep)·cap) — its block, where its experts compute exactly the rows one device's would.
 *
 * A member's local buffer lists the group's rows its own tokens hold, in row order (at least one row: an empty one
 * pads it); the layer's dispatch and combine run on it with local `rowToken` and `slot`. The all-to-all to the owners
 * sends each owner the local rows in its block (a contiguous run), which land at their places in its block; the way
 * back is the same maps reversed. Both ends enumerate the rows of (owner o, token holder w) in row order, so no
 * positions travel: the counts are what every member derived from the gathered probabilities.
 */

/** The name of ep member e's piece of an expert parameter (its rows of every expert it holds): `name@ep1/2`. */
export function epPieceName(name: string, e: number, ep: number): string {
  return ep === 1 ? name : `${name}@ep${e}/${ep}`;
}

/** The parameter and ep place a piece name `name@epE/P` names (null: a whole parameter's name). */
export function parseEpPieceName(piece: string): { name: string; e: number; ep: number } | null {
  const m = /^(.*)@ep(\d+)\/(\d+)$/.exec(piece);
  return m ? { name: m[1], e: Number(m[2]), ep: Number(m[3]) } : null;
}

/** The row maps of one exchange direction: send[k] rows of the sender's tensor to member k, recv[k] where member k's land. */
export interface RowMaps {
  send: Int32Array[];
  recv: Int32Array[];
}

export interface EpPlan {
  /** Rows of this member's local buffer (≥ 1). */
  localRows: number;
  /** Rows of its block of the group's buffer: (E / ep)·cap. */
  blockRows: number;
  /** Local rowToken [localRows]: s·k + j of the local token's choice holding the row, −1 for the pad. */
  rowToken: Int32Array;
  /** Tokens to their experts' owners (the dispatch forward, the combine's gradient backward). */
  toOwners: RowMaps;
  /** Owners back to the tokens' members (the experts' outputs forward, their input gradients backward). */
  toTokens: RowMaps;
}

/**
 * The plan of member `index` of `ep` from the group's rowToken [E·cap] (s·k + j or −1), with `localTokens` tokens a
 * member and k choices a token.
 */
export function epPlan(rowTokenGroup: ArrayLike<number>, k: number, localTokens: number, ep: number, index: number): EpPlan {
  const R = rowTokenGroup.length;
  const blockRows = R / ep;
  const holder = (r: number) => {
    const t = rowTokenGroup[r];
    return t < 0 ? -1 : Math.floor(Math.floor(t / k) / localTokens);
  };
  const local: number[] = [];
  for (let r = 0; r < R; r++) if (holder(r) === index) local.push(r);
  const localRows = Math.max(1, local.length);
  const rowToken = new Int32Array(localRows).fill(-1);
  local.forEach((r, i) => (rowToken[i] = rowTokenGroup[r] - index * localTokens * k));
  const toOwners: RowMaps = { send: [], recv: [] };
  for (let o = 0; o < ep; o++) {
    toOwners.send.push(Int32Array.from(local.map((r, i) => (Math.floor(r / blockRows) === o ? i : -1)).filter((i) => i >= 0)));
    const recv: number[] = [];
    for (let r = index * blockRows; r < (index + 1) * blockRows; r++) if (holder(r) === o) recv.push(r - index * blockRows);
    toOwners.recv.push(Int32Array.from(recv));
  }
  return { localRows, blockRows, rowToken, toOwners, toTokens: { send: toOwners.recv, recv: toOwners.send } };
}

/** The local slot [localTokens, k]: the local row of each of this member's choices, −1 when dropped. */
export function epLocalSlot(slotGroup: ArrayLike<number>, rowTokenGroup: ArrayLike<number>, k: number, localTokens: number, index: number): Int32Array {
  const at = new Map<number, number>();
  let i = 0;
  for (let r = 0; r < rowTokenGroup.length; r++) {
    const t = rowTokenGroup[r];
    if (t >= 0 && Math.floor(Math.floor(t / k) / localTokens) === index) at.set(r, i++);
  }
  const out = new Int32Array(localTokens * k);
  for (let c = 0; c < localTokens * k; c++) {
    const r = slotGroup[index * localTokens * k + c];
    out[c] = r < 0 ? -1 : (at.get(r) as number);
  }
  return out;
}
