// RUN: irprof opt %s --pass-pipeline='builtin.module(irprof-copy-loc-to-body, func.func(convert-linalg-to-loops))' --mlir-print-debuginfo
// Without irprof-copy-loc-to-body the loop body of a named linalg op is loc(unknown).

func.func @mm(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>) loc("model.py":3:5)
  return
}

// CHECK: arith.mulf {{.*}} loc([[MM:#loc[0-9]*]])
// CHECK-NEXT: arith.addf {{.*}} loc([[MM]])
// CHECK: [[MM]] = loc("model.py":3:5)
