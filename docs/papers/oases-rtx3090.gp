set terminal pngcairo size 1200,640
set output 'docs/papers/oases-rtx3090.png'
set datafile separator ','
set key outside below maxrows 4
set grid
set multiplot layout 1,2 title 'scenarios/papers/oases-rtx3090.yaml' noenhanced
set xlabel 'model.hidden' noenhanced
set ylabel 'iteration time (s)'
plot 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'true' && strcol(4) eq 'false') ? $6 : 1/0) with linespoints title 'platform.nvlink_bridges=true strategy.oases=false' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'true' && strcol(4) eq 'true') ? $6 : 1/0) with linespoints title 'platform.nvlink_bridges=true strategy.oases=true' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'false' && strcol(4) eq 'false') ? $6 : 1/0) with linespoints title 'platform.nvlink_bridges=false strategy.oases=false' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'false' && strcol(4) eq 'true') ? $6 : 1/0) with linespoints title 'platform.nvlink_bridges=false strategy.oases=true' noenhanced
set xlabel 'model.hidden' noenhanced
set ylabel 'model TFLOP/s per GPU'
plot 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'true' && strcol(4) eq 'false') ? $7 : 1/0) with linespoints title 'platform.nvlink_bridges=true strategy.oases=false' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'true' && strcol(4) eq 'true') ? $7 : 1/0) with linespoints title 'platform.nvlink_bridges=true strategy.oases=true' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'false' && strcol(4) eq 'false') ? $7 : 1/0) with linespoints title 'platform.nvlink_bridges=false strategy.oases=false' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'false' && strcol(4) eq 'true') ? $7 : 1/0) with linespoints title 'platform.nvlink_bridges=false strategy.oases=true' noenhanced
unset multiplot
set terminal svg size 1200,640
set output 'docs/papers/oases-rtx3090.svg'
set datafile separator ','
set key outside below maxrows 4
set grid
set multiplot layout 1,2 title 'scenarios/papers/oases-rtx3090.yaml' noenhanced
set xlabel 'model.hidden' noenhanced
set ylabel 'iteration time (s)'
plot 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'true' && strcol(4) eq 'false') ? $6 : 1/0) with linespoints title 'platform.nvlink_bridges=true strategy.oases=false' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'true' && strcol(4) eq 'true') ? $6 : 1/0) with linespoints title 'platform.nvlink_bridges=true strategy.oases=true' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'false' && strcol(4) eq 'false') ? $6 : 1/0) with linespoints title 'platform.nvlink_bridges=false strategy.oases=false' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'false' && strcol(4) eq 'true') ? $6 : 1/0) with linespoints title 'platform.nvlink_bridges=false strategy.oases=true' noenhanced
set xlabel 'model.hidden' noenhanced
set ylabel 'model TFLOP/s per GPU'
plot 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'true' && strcol(4) eq 'false') ? $7 : 1/0) with linespoints title 'platform.nvlink_bridges=true strategy.oases=false' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'true' && strcol(4) eq 'true') ? $7 : 1/0) with linespoints title 'platform.nvlink_bridges=true strategy.oases=true' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'false' && strcol(4) eq 'false') ? $7 : 1/0) with linespoints title 'platform.nvlink_bridges=false strategy.oases=false' noenhanced, 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && 1 && strcol(3) eq 'false' && strcol(4) eq 'true') ? $7 : 1/0) with linespoints title 'platform.nvlink_bridges=false strategy.oases=true' noenhanced
unset multiplot
