// RUN: irprof opt %s --pass-pipeline='builtin.module(irprof-copy-loc-to-body, func.func(convert-linalg-to-loops), irprof-reattach{profile=%S/reattach.opprofile.json level=loops})'
// Lowered ops find their stamped origin: one origin reaching many ops is a split, an op carrying
// two profiled origins (here a hand-fused location) sums them.

func.func @mm(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>) loc("irprof.origin=linalg#1"("model.py":3:5))
  "test.fused"() : () -> () loc(fused["irprof.origin=linalg#1", "irprof.origin=linalg#2"])
  return loc("irprof.origin=linalg#3"("model.py":4:1))
} loc("irprof.origin=linalg#0"("model.py":1:1))

// CHECK: module attributes {irprof.summary = {{{.*}}level = "loops"{{.*}}reattached_from = "linalg"
// CHECK: arith.mulf {{.*}}irprof.profile = {{{.*}}kernels = ["mm_kernel"]{{.*}}source = "reattach:linalg#1 split 7/10", total_ns = 700 : i64
// CHECK: } {irprof.profile = {{{.*}}source = "reattach:linalg#1 split 1/10"
// CHECK: "test.fused"() {irprof.profile = {{{.*}}fused_with = ["linalg#1", "linalg#2"]{{.*}}source = "reattach:fused linalg#1+linalg#2", total_ns = 1000 : i64}}
// CHECK-NOT: irprof.profile
