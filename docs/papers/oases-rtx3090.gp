set terminal pngcairo size 1150,600
set output 'docs/papers/oases-rtx3090.png'
set datafile separator ','
set grid
set termoption noenhanced
set key outside right top vertical box opaque
set xlabel 'hidden size'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'oases-rtx3090' font ',14'
set title ''
plot 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq 'true' && strcol(4) eq 'false') ? $7 * 1 : 1/0) with linespoints lw 2 pt 1 title 'nvlink_bridges true, Oases false', \
  'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq 'true' && strcol(4) eq 'true') ? $7 * 1 : 1/0) with linespoints lw 2 pt 2 title 'nvlink_bridges true, Oases true', \
  'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq 'false' && strcol(4) eq 'false') ? $7 * 1 : 1/0) with linespoints lw 2 pt 3 title 'nvlink_bridges false, Oases false', \
  'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq 'false' && strcol(4) eq 'true') ? $7 * 1 : 1/0) with linespoints lw 2 pt 4 title 'nvlink_bridges false, Oases true'
unset multiplot
set terminal svg size 1150,600
set output 'docs/papers/oases-rtx3090.svg'
set datafile separator ','
set grid
set termoption noenhanced
set key outside right top vertical box opaque
set xlabel 'hidden size'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'oases-rtx3090' font ',14'
set title ''
plot 'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq 'true' && strcol(4) eq 'false') ? $7 * 1 : 1/0) with linespoints lw 2 pt 1 title 'nvlink_bridges true, Oases false', \
  'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq 'true' && strcol(4) eq 'true') ? $7 * 1 : 1/0) with linespoints lw 2 pt 2 title 'nvlink_bridges true, Oases true', \
  'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq 'false' && strcol(4) eq 'false') ? $7 * 1 : 1/0) with linespoints lw 2 pt 3 title 'nvlink_bridges false, Oases false', \
  'docs/papers/oases-rtx3090.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq 'false' && strcol(4) eq 'true') ? $7 * 1 : 1/0) with linespoints lw 2 pt 4 title 'nvlink_bridges false, Oases true'
unset multiplot
