set terminal pngcairo size 1680,1020
set output 'docs/validation/busbw.png'
set multiplot layout 3,4 title 'nccl-tests bus bandwidth: measured (points) vs tpsim (line)'
set logscale x 2
set format x '%.0b%BB'
set xtics 256
set xlabel 'message size (bytes)'
set ylabel 'bus bandwidth (GB/s)'
set key top left
set grid
set title 'abci_a100_1node_8gpu_all_reduce (fit)' noenhanced
plot 'docs/validation/abci_a100_1node_8gpu_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'abci_a100_1node_4gpu_all_reduce (fit)' noenhanced
plot 'docs/validation/abci_a100_1node_4gpu_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'a100_8gpu_nvswitch_all_reduce_stas00' noenhanced
plot 'docs/validation/a100_8gpu_nvswitch_all_reduce_stas00.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'abci_a100_2node_16gpu_all_reduce (fit)' noenhanced
plot 'docs/validation/abci_a100_2node_16gpu_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'abci_a100_4node_32gpu_all_reduce' noenhanced
plot 'docs/validation/abci_a100_4node_32gpu_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'a100_3node_24gpu_hdr_ib_all_reduce_PARTIAL' noenhanced
plot 'docs/validation/a100_3node_24gpu_hdr_ib_all_reduce_PARTIAL.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'h100_hgx_4gpu_all_reduce (fit)' noenhanced
plot 'docs/validation/h100_hgx_4gpu_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'h100_hgx_4gpu_all_gather (fit)' noenhanced
plot 'docs/validation/h100_hgx_4gpu_all_gather.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'h100_hgx_4gpu_reduce_scatter' noenhanced
plot 'docs/validation/h100_hgx_4gpu_reduce_scatter.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'rtx2080ti_2gpu_pcie_nop2p_all_reduce (fit)' noenhanced
plot 'docs/validation/rtx2080ti_2gpu_pcie_nop2p_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'rtx2080ti_2gpu_pcie_nop2p_all_gather' noenhanced
plot 'docs/validation/rtx2080ti_2gpu_pcie_nop2p_all_gather.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
unset multiplot
set terminal svg size 1680,1020
set output 'docs/validation/busbw.svg'
set multiplot layout 3,4 title 'nccl-tests bus bandwidth: measured (points) vs tpsim (line)'
set logscale x 2
set format x '%.0b%BB'
set xtics 256
set xlabel 'message size (bytes)'
set ylabel 'bus bandwidth (GB/s)'
set key top left
set grid
set title 'abci_a100_1node_8gpu_all_reduce (fit)' noenhanced
plot 'docs/validation/abci_a100_1node_8gpu_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'abci_a100_1node_4gpu_all_reduce (fit)' noenhanced
plot 'docs/validation/abci_a100_1node_4gpu_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'a100_8gpu_nvswitch_all_reduce_stas00' noenhanced
plot 'docs/validation/a100_8gpu_nvswitch_all_reduce_stas00.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'abci_a100_2node_16gpu_all_reduce (fit)' noenhanced
plot 'docs/validation/abci_a100_2node_16gpu_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'abci_a100_4node_32gpu_all_reduce' noenhanced
plot 'docs/validation/abci_a100_4node_32gpu_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'a100_3node_24gpu_hdr_ib_all_reduce_PARTIAL' noenhanced
plot 'docs/validation/a100_3node_24gpu_hdr_ib_all_reduce_PARTIAL.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'h100_hgx_4gpu_all_reduce (fit)' noenhanced
plot 'docs/validation/h100_hgx_4gpu_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'h100_hgx_4gpu_all_gather (fit)' noenhanced
plot 'docs/validation/h100_hgx_4gpu_all_gather.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'h100_hgx_4gpu_reduce_scatter' noenhanced
plot 'docs/validation/h100_hgx_4gpu_reduce_scatter.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'rtx2080ti_2gpu_pcie_nop2p_all_reduce (fit)' noenhanced
plot 'docs/validation/rtx2080ti_2gpu_pcie_nop2p_all_reduce.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
set title 'rtx2080ti_2gpu_pcie_nop2p_all_gather' noenhanced
plot 'docs/validation/rtx2080ti_2gpu_pcie_nop2p_all_gather.dat' using 1:2 with points pt 7 title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'
unset multiplot
