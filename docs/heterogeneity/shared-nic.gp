set datafile separator ","
set xlabel "NIC rate, one NIC per server (GB/s)"
set ylabel "slowdown against running alone"
set logscale x 2
set key top right
set grid
set yrange [1:2]
set terminal pngcairo size 800,500
set output "docs/heterogeneity/shared-nic.png"
plot "< awk -F, '$1 == 1 && $2 != \"preset\" && $3 == \"dp\"' docs/heterogeneity/shared-nic.csv" using 2:6 with linespoints title "job dp (1.3B, TP 4 x DP 2)", \
     "< awk -F, '$1 == 1 && $2 != \"preset\" && $3 == \"tp\"' docs/heterogeneity/shared-nic.csv" using 2:6 with linespoints title "job tp (13B, TP 8 across servers)"
set terminal svg size 800,500
set output "docs/heterogeneity/shared-nic.svg"
plot "< awk -F, '$1 == 1 && $2 != \"preset\" && $3 == \"dp\"' docs/heterogeneity/shared-nic.csv" using 2:6 with linespoints title "job dp (1.3B, TP 4 x DP 2)", \
     "< awk -F, '$1 == 1 && $2 != \"preset\" && $3 == \"tp\"' docs/heterogeneity/shared-nic.csv" using 2:6 with linespoints title "job tp (13B, TP 8 across servers)"
