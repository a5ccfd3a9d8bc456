// RUN: irprof opt %s --pass-pipeline='builtin.module(irprof-annotate{profile=%S/annotate.opprofile.json attr=ts-dur})'
// The ts-dur layout: profiler_data = {ts = first event start, dur = total attributed time}.

func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = "tf.MatMul"(%arg0, %arg0) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> loc(fused["MatMul:", "dense/MatMul"])
  return %0 : tensor<2x2xf32>
}

// CHECK: "tf.MatMul"(%arg0, %arg0) {profiler_data = {dur = 6000 : i64, ts = 1000 : i64}}
// CHECK-NOT: irprof.profile =
