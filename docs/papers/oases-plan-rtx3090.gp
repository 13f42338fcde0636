set terminal pngcairo size 1680,900
set output 'docs/papers/oases-plan-rtx3090.png'
set datafile separator ','
set grid
set termoption noenhanced
set key outside right top vertical box opaque
set xlabel 'hidden size'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 2,3 title 'oases-plan-rtx3090 (nvlink_bridges true, Oases false, MLP TP 2)' font ',14'
set title 'layers 24'
unset key
plot 'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '2' && strcol(3) eq '24') ? $10 * 1 : 1/0) with linespoints lw 2 pt 1 title 'attention TP 2', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '4' && strcol(3) eq '24') ? $10 * 1 : 1/0) with linespoints lw 2 pt 2 title 'attention TP 4', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '8' && strcol(3) eq '24') ? $10 * 1 : 1/0) with linespoints lw 2 pt 3 title 'attention TP 8'
set title 'layers 16'
unset key
plot 'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '2' && strcol(3) eq '16') ? $10 * 1 : 1/0) with linespoints lw 2 pt 1 title 'attention TP 2', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '4' && strcol(3) eq '16') ? $10 * 1 : 1/0) with linespoints lw 2 pt 2 title 'attention TP 4', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '8' && strcol(3) eq '16') ? $10 * 1 : 1/0) with linespoints lw 2 pt 3 title 'attention TP 8'
set title 'layers 8'
unset key
plot 'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '2' && strcol(3) eq '8') ? $10 * 1 : 1/0) with linespoints lw 2 pt 1 title 'attention TP 2', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '4' && strcol(3) eq '8') ? $10 * 1 : 1/0) with linespoints lw 2 pt 2 title 'attention TP 4', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '8' && strcol(3) eq '8') ? $10 * 1 : 1/0) with linespoints lw 2 pt 3 title 'attention TP 8'
set title 'layers 4'
unset key
plot 'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '2' && strcol(3) eq '4') ? $10 * 1 : 1/0) with linespoints lw 2 pt 1 title 'attention TP 2', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '4' && strcol(3) eq '4') ? $10 * 1 : 1/0) with linespoints lw 2 pt 2 title 'attention TP 4', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '8' && strcol(3) eq '4') ? $10 * 1 : 1/0) with linespoints lw 2 pt 3 title 'attention TP 8'
set key center center vertical box opaque
unset border
unset tics
unset xlabel
unset ylabel
unset title
unset grid
set xrange [0:1]
set yrange [0:1]
unset logscale
plot 2 with linespoints lw 2 pt 1 title 'attention TP 2', 2 with linespoints lw 2 pt 2 title 'attention TP 4', 2 with linespoints lw 2 pt 3 title 'attention TP 8'
unset multiplot
set terminal svg size 1680,900
set output 'docs/papers/oases-plan-rtx3090.svg'
set datafile separator ','
set grid
set termoption noenhanced
set key outside right top vertical box opaque
set xlabel 'hidden size'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 2,3 title 'oases-plan-rtx3090 (nvlink_bridges true, Oases false, MLP TP 2)' font ',14'
set title 'layers 24'
unset key
plot 'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '2' && strcol(3) eq '24') ? $10 * 1 : 1/0) with linespoints lw 2 pt 1 title 'attention TP 2', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '4' && strcol(3) eq '24') ? $10 * 1 : 1/0) with linespoints lw 2 pt 2 title 'attention TP 4', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '8' && strcol(3) eq '24') ? $10 * 1 : 1/0) with linespoints lw 2 pt 3 title 'attention TP 8'
set title 'layers 16'
unset key
plot 'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '2' && strcol(3) eq '16') ? $10 * 1 : 1/0) with linespoints lw 2 pt 1 title 'attention TP 2', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '4' && strcol(3) eq '16') ? $10 * 1 : 1/0) with linespoints lw 2 pt 2 title 'attention TP 4', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '8' && strcol(3) eq '16') ? $10 * 1 : 1/0) with linespoints lw 2 pt 3 title 'attention TP 8'
set title 'layers 8'
unset key
plot 'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '2' && strcol(3) eq '8') ? $10 * 1 : 1/0) with linespoints lw 2 pt 1 title 'attention TP 2', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '4' && strcol(3) eq '8') ? $10 * 1 : 1/0) with linespoints lw 2 pt 2 title 'attention TP 4', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '8' && strcol(3) eq '8') ? $10 * 1 : 1/0) with linespoints lw 2 pt 3 title 'attention TP 8'
set title 'layers 4'
unset key
plot 'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '2' && strcol(3) eq '4') ? $10 * 1 : 1/0) with linespoints lw 2 pt 1 title 'attention TP 2', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '4' && strcol(3) eq '4') ? $10 * 1 : 1/0) with linespoints lw 2 pt 2 title 'attention TP 4', \
  'docs/papers/oases-plan-rtx3090.plot.csv' using ((1 && strcol(4) eq 'true' && strcol(5) eq 'false' && strcol(7) eq '2') ? ($2) : 1/0):((strcol(8) eq 'ok' && strcol(6) eq '8' && strcol(3) eq '4') ? $10 * 1 : 1/0) with linespoints lw 2 pt 3 title 'attention TP 8'
set key center center vertical box opaque
unset border
unset tics
unset xlabel
unset ylabel
unset title
unset grid
set xrange [0:1]
set yrange [0:1]
unset logscale
plot 2 with linespoints lw 2 pt 1 title 'attention TP 2', 2 with linespoints lw 2 pt 2 title 'attention TP 4', 2 with linespoints lw 2 pt 3 title 'attention TP 8'
unset multiplot
