/** A kernel's uniform params, built as 32-bit words in the order of the WGSL struct's fields. */
export class Params {
  private readonly u = new Uint32Array(64);
  private readonly f = new Float32Array(this.u.buffer);
  private n = 0;
  static of(): Params {
    return new Params();
  }
  U(v: number): this {
    this.u[this.n++] = v >>> 0;
    return this;
  }
  F(v: number): this {
    this.f[this.n++] = v;
    return this;
  }
  bytes(): Uint8Array {
    return new Uint8Array(this.u.buffer, 0, Math.max(16, Math.ceil(this.n / 4) * 16));
  }
}

/** A float's 32 bits, for a u32 field that a kernel reinterprets. */
export function f32Bits(v: number): number {
  const f = new Float32Array([v]);
  return new Uint32Array(f.buffer)[0];
}
