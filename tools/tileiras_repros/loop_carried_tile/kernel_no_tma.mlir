entry @carried_row_sums(%arg0: tile<ptr<f32>>, %arg1: tile<i32>, %arg2: tile<i32>, %arg3: tile<ptr<f16>>, %arg4: tile<i32>, %arg5: tile<i32>, %arg6: tile<i32>, %arg7: tile<i32>) {
  %assume = assume div_by<16>, %arg0 : tile<ptr<f32>>
  %assume_0 = assume bounded<0, ?>, %arg1 : tile<i32>
  %assume_assume = assume div_by<256>, %assume_0 : tile<i32>
  %tview = make_tensor_view %assume, shape = [%assume_assume], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
  %assume_1 = assume div_by<16>, %arg3 : tile<ptr<f16>>
  %assume_2 = assume bounded<0, ?>, %arg4 : tile<i32>
  %assume_assume_3 = assume div_by<256>, %assume_2 : tile<i32>
  %assume_4 = assume bounded<0, ?>, %arg5 : tile<i32>
  %assume_assume_5 = assume div_by<256>, %assume_4 : tile<i32>
  %assume_6 = assume bounded<0, ?>, %arg6 : tile<i32>
  %assume_assume_7 = assume div_by<8>, %assume_6 : tile<i32>
  %tview_8 = make_tensor_view %assume_1, shape = [%assume_assume_3, %assume_assume_5], strides = [%assume_assume_7, 1] : tile<i32> -> tensor_view<?x?xf16, strides=[?,1]>
  %0 = make_token : token
  %blockId_x, %blockId_y, %blockId_z = get_tile_block_id : tile<i32>
  %pview = make_partition_view %tview_8 : partition_view<tile=(4x1024), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>
  %pview_9 = make_partition_view %tview : partition_view<tile=(4), tensor_view<?xf32, strides=[1]>>
  %gridSize_x, %gridSize_y, %gridSize_z = get_num_tile_blocks : tile<i32>
  %cst_4_i32 = constant <i32: 4> : tile<i32>
  %1 = divi %assume_assume_3, %cst_4_i32 signed rounding<positive_inf> : tile<i32>
  %cst_1_i32 = constant <i32: 1> : tile<i32>
  %2 = subi %1, %cst_1_i32 : tile<i32>
  %cst_0_i32 = constant <i32: 0> : tile<i32>
  %tile, %result_token = load_view_tko weak %pview[%blockId_x, %cst_0_i32] optimization_hints = <default = {allow_tma = false}> : partition_view<tile=(4x1024), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>, tile<i32> -> tile<4x1024xf16>, token
  %cst_1_i32_10 = constant <i32: 1> : tile<i32>
  %3 = addi %2, %cst_1_i32_10 : tile<i32>
  %cst_0_i32_11 = constant <i32: 0> : tile<i32>
  %for = for %loopIdx in (%blockId_x to %3, step %gridSize_x) : tile<i32> iter_values(%iterArg0 = %tile) -> (tile<4x1024xf16>) {
    %4 = addi %loopIdx, %gridSize_x : tile<i32>
    %5 = mini %4, %2 signed : tile<i32>
    %tile_12, %result_token_13 = load_view_tko weak %pview[%5, %cst_0_i32_11] optimization_hints = <default = {allow_tma = false}> : partition_view<tile=(4x1024), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>, tile<i32> -> tile<4x1024xf16>, token
    %6 = ftof %iterArg0  : tile<4x1024xf16> -> tile<4x1024xf32>
    %reduce = reduce %6 dim=1 identities=[0.000000e+00 : f32] : tile<4x1024xf32> -> tile<4xf32> 
    (%reduce_lhs: tile<f32>, %reduce_rhs: tile<f32>) {
      %8 = addf %reduce_lhs, %reduce_rhs  : tile<f32>
      yield %8 : tile<f32>
    }
    %7 = store_view_tko weak %reduce, %pview_9[%loopIdx] token = %0 : tile<4xf32>, partition_view<tile=(4), tensor_view<?xf32, strides=[1]>>, tile<i32> -> token
    continue %tile_12 : tile<4x1024xf16>
  }
  return
}
