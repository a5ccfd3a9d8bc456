// RUN: irprof opt %s --pass-pipeline='builtin.module(irprof-stamp-origin{level=tf})' --mlir-print-debuginfo
// Every op below the module gets `irprof.origin=<level>#<pre-order index>` around its location.

func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = "tf.MatMul"(%arg0, %arg0) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> loc(fused["MatMul:", "dense/MatMul"])
  %1 = "tf.Relu"(%0) : (tensor<2x2xf32>) -> tensor<2x2xf32> loc(fused["Relu:", "dense/Relu"])
  return %1 : tensor<2x2xf32> loc(unknown)
} loc(unknown)

// CHECK: func.func @main
// CHECK: "tf.MatMul"{{.*}}loc([[MM:#loc[0-9]+]])
// CHECK: "tf.Relu"{{.*}}loc([[RELU:#loc[0-9]+]])
// CHECK: "irprof.origin=tf#0"
// CHECK: [[MM]] = loc("irprof.origin=tf#1"(
// CHECK-NEXT: [[RELU]] = loc("irprof.origin=tf#2"(
